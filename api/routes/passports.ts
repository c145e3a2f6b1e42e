/**
 * Passports (SPEC 2, 3, 4.1; DESIGN.md sections 5 and 6):
 *   POST /passport/request                      signed request + x402 -> passportIssuance workflow
 *   GET  /passport/address/{address}            passports of an owner account (active first)
 *   GET  /passport/{tokenId}/{serial}           one active passport (404 missing or revoked)
 *   GET  /passports?tokenId=|env=               paginated list (one of tokenId, env required)
 *   POST /passport/{tokenId}/{serial}/upgrade   signed request + x402 for the price difference -> passportUpgrade
 *
 * Paid routes run, in order: DID signature (the unpaid first call only verifies it, without
 * consuming the challenge, so the x402 client can retry the same request with its payment), the
 * business checks that must refuse BEFORE money moves (tier, capabilities, 409, receivability,
 * ownership, an upgrade already pending for the passport), then the x402 gate, which settles the payment before the handler. The handler claims
 * the wallet (or passport) in PostgreSQL for this payment and starts the workflow; a payment that
 * loses a race is refunded by the passportRefund workflow. The handler waits for the workflow at
 * most WORKFLOW_WAIT_MS; after that it answers 202 request_pending with a Location to poll.
 * A retried request carrying a payment that already paid for this wallet's issuance (or upgrade)
 * returns that outcome instead of charging again.
 * No claim stays pending once its workflow is over: a workflow that cannot be started or ends
 * without a result (failed, terminated) has its claim turned 'refused' and its payment refunded by
 * passportRefund; a pending claim older than STALE_CLAIM_MS whose workflow is not running (the API
 * died between claim and start) is released the same way by the next request for that wallet or
 * passport. The 502 execution_failed answer names failedStep and the refund (refunded in which
 * transaction, pending in which workflow, or none when no settled payment exists).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import { z } from 'zod';
import type { AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { passportState, scopedWorkflowId, WORKFLOW_WAIT_MS } from '../passportState.js';
import { notFound, parsePassportIds, passportJson, passportLinks, publicBase, hashScanLink } from '../passportViews.js';
import { cacheReady, pageOfPassports, passportChanged, passportsOfAccount, usePassportCache } from '../passportCache.js';
import { sendJson, serializerFor } from '../serializer.js';
import { isPending, pendingReply, startOrAttach, waitForResult, workflowRunning, WorkflowRunFailed } from '../workflowCalls.js';
import { errorResponses } from '../schemas/common.js';
import {
  addressPassportsSchema,
  passportIssuanceResultSchema,
  passportListSchema,
  passportPathParams,
  passportRequestBodySchema,
  passportSchema,
  passportsQuerySchema,
  upgradeBodySchema,
  upgradeResultSchema,
} from '../schemas/passports.js';
import { requirePayment } from '../plugins/x402.js';
import { CAPABILITIES, isCapability, type Capability } from '../../domain/capabilities.js';
import { HEDERA_NETWORKS, isAccountId, isEntityId, parseHederaDid } from '../../domain/did.js';
import { capabilitiesOutsideTier, isTier, tierEntry, tierPriceTinybars, TIERS, upgradePriceTinybars, type Tier } from '../../domain/tiers.js';
import { checkTokenReceivable } from '../../ledger/operations.js';
import { paymentTransactionOf } from '../../ledger/x402/verifyPayment.js';
import { normalizeTransactionId } from '../../ledger/x402/ids.js';
import { findPaymentByTransactionId } from '../../db/queries/payments.js';
import {
  claimIssuance,
  claimUpgrade,
  findActivePassportByAccount,
  findIssuance,
  findPassport,
  findPendingIssuance,
  findPendingUpgrade,
  findUpgrade,
  markRequestRefused,
  requestLedgerWritesStarted,
  type IssuanceRow,
  type PassportRow,
  type UpgradeRow,
} from '../../db/queries/passports.js';
import {
  passportIssuanceWorkflowId,
  passportRefundWorkflowId,
  passportUpgradeWorkflowId,
  type SettledPaymentRef,
} from '../../workflows/passportIds.js';
import type { PassportIssuanceInput, PassportIssuanceResult } from '../../workflows/passportIssuance.js';
import type { PassportUpgradeInput, PassportUpgradeResult } from '../../workflows/passportUpgrade.js';
import type { PassportRefundInput, PassportRefundResult } from '../../workflows/passportRefund.js';

function paymentTransactionIdOf(request: FastifyRequest): string | null {
  const header = request.headers['payment-signature'];
  if (typeof header !== 'string' || header.length === 0) return null;
  try {
    const payload = decodePaymentSignatureHeader(header);
    // the same normalised form the x402 gate records the payment under
    return normalizeTransactionId(paymentTransactionOf(payload)?.transactionId?.toString());
  } catch {
    return null;
  }
}

function hasPaymentHeader(request: FastifyRequest): boolean {
  const h = request.headers['payment-signature'];
  return typeof h === 'string' && h.length > 0;
}

function replayedPayment(): ApiError {
  return new ApiError('passport_payment_failed', 'This payment was already used', {
    hint: 'A payment pays for one request; build a new payment (new transaction id) for this one',
  });
}

/** A pending claim younger than this may still be starting its workflow; older and not running, it is stale. */
const STALE_CLAIM_MS = 60_000;

/** What happened to the payment of a request that did not get what it paid for. */
type RefundOutcome =
  | { refund: 'refunded'; refundTransactionId: string }
  | { refund: 'pending'; refundWorkflowId: string }
  /** why: the release reason ("...; not refunded: <failure>"), for the hint only */
  | { refund: 'none'; why?: string | null };

/** The refund outcome of a workflow result that did not deliver. */
function outcomeOfResult(r: { status: 'refunded'; refundTransactionId: string } | { status: 'released'; reason: string }): RefundOutcome {
  return r.status === 'refunded' ? { refund: 'refunded', refundTransactionId: r.refundTransactionId } : { refund: 'none', why: r.reason };
}

/** The refund outcome recorded on a finished request row. */
function outcomeOfRow(row: { status: string; refund_transaction_id: string | null; error: string | null }): RefundOutcome {
  return row.status === 'refunded' && row.refund_transaction_id ? { refund: 'refunded', refundTransactionId: row.refund_transaction_id } : { refund: 'none', why: row.error };
}

function refundSentence(paymentTransactionId: string, o: RefundOutcome): string {
  if (o.refund === 'refunded') return `Your payment ${paymentTransactionId} was refunded in ${o.refundTransactionId}.`;
  if (o.refund === 'pending') {
    return `Your payment ${paymentTransactionId} is being refunded (workflow ${o.refundWorkflowId}); retry this request with the same PAYMENT-SIGNATURE to read the refund transaction.`;
  }
  if (!o.why || /PaymentNotFound|PaymentNotSettled/.test(o.why)) return `No settled payment ${paymentTransactionId} was found (here or on the ledger), so nothing was refunded.`;
  return `Your payment ${paymentTransactionId} could not be refunded automatically (${o.why.slice(-160)}); quote its id to the operator.`;
}

/** 502 for a paid request whose workflow did not deliver: which step failed and what happened to the payment. */
function executionFailed(what: string, paymentTransactionId: string, failedStep: string, reason: string | null, o: RefundOutcome): ApiError {
  return new ApiError('execution_failed', `${what}: ${failedStep} failed`, {
    hint: `${reason && !(o.refund === 'none' && o.why === reason) ? `${reason.slice(0, 200)}. ` : ''}${refundSentence(paymentTransactionId, o)} Retry with a new payment.`,
    extra: { paymentTransactionId, failedStep, ...publicOutcome(o) },
  });
}

/** The outcome as it goes into an error body (the release reason stays in the hint). */
function publicOutcome(o: RefundOutcome): Record<string, string> {
  if (o.refund === 'refunded') return { refund: o.refund, refundTransactionId: o.refundTransactionId };
  if (o.refund === 'pending') return { refund: o.refund, refundWorkflowId: o.refundWorkflowId };
  return { refund: 'none' };
}

/** The step a request's recorded error names (workflow results and claim releases write "<step> failed: ..." or "workflow ..."). */
function failedStepOf(error: string | null): string | null {
  const m = /^(mint|deliver|metadata update|confirmSettlement) failed|^(workflow (?:not started|ended without a result))/.exec(error ?? '');
  return m ? (m[1] ?? m[2]) : null;
}

function settledRef(request: FastifyRequest): SettledPaymentRef {
  const p = request.payment!;
  return { transactionId: p.transactionId, payer: p.payer, amountTinybars: p.amountTinybars.toString() };
}

// ------------------------------------------------------------------ routes

interface IssuancePlan {
  tier: Tier;
  capabilities: Capability[];
  endpoint?: string;
  /** an earlier request already claimed the wallet with this payment */
  attach?: IssuanceRow;
  /** a settled payment for this wallet that never reached a claim (e.g. the API died after settling) */
  orphan?: SettledPaymentRef;
}

interface UpgradePlan {
  passport: PassportRow;
  oldTier: Tier;
  newTier: Tier;
  price: bigint;
  attach?: UpgradeRow;
}

const passportRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;
  const tokenId = ledger.deployment.passportTokenId;
  const state = passportState(ctx);
  const issuancePlans = new WeakMap<FastifyRequest, IssuancePlan>();
  const upgradePlans = new WeakMap<FastifyRequest, UpgradePlan>();
  const paymentsEnabled = app.hasDecorator('x402');

  const authenticate = async (request: FastifyRequest, did: string | undefined) => {
    // The unpaid first call only checks the challenge; the paid retry uses it up.
    await app.signedRequest(() => did, { consume: hasPaymentHeader })(request);
  };

  // ---------------------------------------------------------------- issuance

  const issuanceResponse = (request: FastifyRequest, r: { tokenId: string; serialNumber: number; did: string; tier: string; capabilities: string[]; accountId: string }) => ({
    tokenId: r.tokenId,
    serialNumber: r.serialNumber,
    did: r.did,
    tier: r.tier,
    capabilities: r.capabilities,
    hashScanLink: hashScanLink(network, publicBase(ctx, request), r.tokenId, r.serialNumber),
    _links: passportLinks(r.tokenId, r.serialNumber, r.did, r.accountId),
  });

  /** Pays a settled payment back through its passportRefund workflow (one per payment; the refund itself is idempotent). */
  const refund = async (paymentTransactionId: string, reason: string): Promise<RefundOutcome> => {
    const handle = await startOrAttach(ctx, 'passportRefund', scopedWorkflowId(state, passportRefundWorkflowId(paymentTransactionId)), {
      paymentTransactionId,
      reason,
      ...(state.timings ? { timings: state.timings } : {}),
    } satisfies PassportRefundInput);
    const r = await waitForResult<PassportRefundResult>(handle, state.workflowWaitMs);
    if (isPending(r)) return { refund: 'pending', refundWorkflowId: handle.workflowId };
    return outcomeOfResult(r);
  };

  /** Refunds a payment whose request was refused after settlement and answers with the refusal. */
  const refuseAfterSettlement = async (paymentTransactionId: string, refusal: ApiError): Promise<never> => {
    const o = await refund(paymentTransactionId, refusal.code);
    throw new ApiError(refusal.code, refusal.message, {
      hint: `${refusal.hint ?? ''} ${refundSentence(paymentTransactionId, o)}`.trim(),
      status: refusal.status,
      extra: { paymentTransactionId, ...publicOutcome(o) },
    });
  };

  /**
   * Turns a claim whose workflow never ran, or ended without a result (failed, terminated, timed
   * out), into a refusal (the wallet or passport is free at once) and refunds its payment. Returns
   * 'running' when the workflow runs after all, 'done' when the request had already finished, and
   * 'unfinished' when the workflow already wrote to the ledger for this payment: such a request is
   * finished by running its (idempotent) workflow again, never refunded.
   */
  const abandonClaim = async (paymentTransactionId: string, workflowId: string, reason: string): Promise<RefundOutcome | 'running' | 'done' | 'unfinished'> => {
    const running = await workflowRunning(ctx, workflowId);
    if (running) return 'running';
    if (running === null) {
      throw new ApiError('service_unavailable', 'The workflow service is unavailable', {
        hint: `Retry the same request with the same PAYMENT-SIGNATURE after 30 seconds; your payment ${paymentTransactionId} is kept for it`,
      });
    }
    if (await requestLedgerWritesStarted(sql, workflowId, paymentTransactionId)) return 'unfinished';
    const status = await markRequestRefused(sql, paymentTransactionId, reason);
    if (status === 'issued' || status === 'upgraded') return 'done';
    try {
      return await refund(paymentTransactionId, reason);
    } catch {
      throw new ApiError('service_unavailable', 'The refund could not be started', {
        hint: `Your payment ${paymentTransactionId} is owed back and nothing was issued: retry this request with the same PAYMENT-SIGNATURE after 30 seconds`,
      });
    }
  };

  /**
   * Starts (or attaches to) the workflow of a claimed request and waits a bounded time. When the
   * workflow cannot be started or ends without a result, the claim is abandoned and refunded, and
   * the answer is a 502 saying so (a 202 when the workflow turns out to be running after all).
   */
  const runClaimed = async <T>(
    reply: FastifyReply,
    what: string,
    workflowType: 'passportIssuance' | 'passportUpgrade',
    claim: { paymentTransactionId: string; workflowId: string },
    input: PassportIssuanceInput | PassportUpgradeInput,
    pollUrl: string,
  ): Promise<{ result: T } | { reply: FastifyReply }> => {
    // a run that ended without a result after writing to the ledger is run once more to finish
    for (let attempt = 0; ; attempt++) {
      let started = false;
      try {
        const handle = await startOrAttach(ctx, workflowType, claim.workflowId, input);
        started = true;
        const r = await waitForResult<T>(handle, state.workflowWaitMs);
        if (isPending(r)) return { reply: pendingReply(reply, handle.workflowId, pollUrl) };
        return { result: r };
      } catch (err) {
        const notStarted = !started && err instanceof ApiError && err.code === 'service_unavailable';
        if (!notStarted && !(err instanceof WorkflowRunFailed)) throw err;
        const reason = notStarted ? 'workflow not started' : 'workflow ended without a result';
        reply.request.log.warn({ err: (err as Error).message, workflowId: claim.workflowId }, 'the workflow of a claimed request did not run to its end');
        const o = await abandonClaim(claim.paymentTransactionId, claim.workflowId, reason);
        if (o === 'unfinished' && attempt === 0) continue;
        if (o === 'unfinished') {
          throw new ApiError('execution_failed', `${what}: the workflow ended twice without a result after writing to the ledger`, {
            hint: `Your payment ${claim.paymentTransactionId} is kept for this request: retry it with the same PAYMENT-SIGNATURE to finish it`,
            extra: { paymentTransactionId: claim.paymentTransactionId, failedStep: 'workflow', refund: 'none' },
          });
        }
        if (o === 'running') return { reply: pendingReply(reply, claim.workflowId, pollUrl) };
        if (o === 'done') throw new ApiError('execution_failed', `${what}: the workflow ended without a result after the request was recorded`, { hint: `Read ${pollUrl}` });
        throw executionFailed(what, claim.paymentTransactionId, notStarted ? 'workflow start' : 'workflow', reason, o);
      }
    }
  };

  /**
   * A pending claim blocks new requests for its wallet (or passport) only while its workflow may
   * still run: one older than STALE_CLAIM_MS whose workflow is not running is abandoned and its
   * payment refunded, and true is returned (the caller may go on). One whose workflow already wrote
   * to the ledger keeps blocking: it is finished by a retry of its own request, never refunded.
   */
  const releasedStaleClaim = async (row: { payment_transaction_id: string; workflow_id: string; created_at: Date }): Promise<boolean> => {
    if (Date.now() - row.created_at.getTime() < STALE_CLAIM_MS) return false;
    if ((await workflowRunning(ctx, row.workflow_id)) !== false) return false;
    if (await requestLedgerWritesStarted(sql, row.workflow_id, row.payment_transaction_id)) return false;
    const status = await markRequestRefused(sql, row.payment_transaction_id, 'workflow not started');
    if (status !== 'refused') return status !== null;
    await refund(row.payment_transaction_id, 'workflow not started').catch(() => undefined); // a retry of that payment finishes it
    return true;
  };

  const runIssuance = async (request: FastifyRequest, reply: FastifyReply, row: IssuanceRow, payment: SettledPaymentRef) => {
    const input: PassportIssuanceInput = {
      network: row.network,
      accountId: row.account_id,
      did: row.did,
      tier: row.tier as Tier,
      capabilities: row.capabilities as Capability[],
      ...(row.endpoint ? { endpoint: row.endpoint } : {}),
      payment,
      ...(state.timings ? { timings: state.timings } : {}),
    };
    const run = await runClaimed<PassportIssuanceResult>(reply, 'The passport could not be issued', 'passportIssuance', { paymentTransactionId: row.payment_transaction_id, workflowId: row.workflow_id }, input, `/passport/address/${row.account_id}`);
    if ('reply' in run) return run.reply;
    const r = run.result;
    if (r.status === 'refunded' || r.status === 'released') {
      throw executionFailed('The passport could not be issued', payment.transactionId, r.failedStep, r.reason, outcomeOfResult(r));
    }
    await passportChanged(sql, r.tokenId, r.serialNumber);
    return issuanceResponse(request, r);
  };

  /** The outcome of an issuance an earlier request already claimed with this payment. */
  const resumeIssuance = async (request: FastifyRequest, reply: FastifyReply, row: IssuanceRow) => {
    if (row.status === 'issued' && row.token_id && row.serial !== null) {
      const p = await findPassport(sql, row.token_id, row.serial);
      if (!p || p.revoked_at) throw replayedPayment();
      return issuanceResponse(request, { tokenId: p.token_id, serialNumber: Number(p.serial), did: p.did, tier: p.tier, capabilities: p.capabilities, accountId: p.account_id });
    }
    const payment = await findPaymentByTransactionId(sql, row.payment_transaction_id);
    if (!payment) throw replayedPayment();
    const ref: SettledPaymentRef = { transactionId: payment.transaction_id, payer: payment.payer, amountTinybars: payment.amount_tinybars.toString() };
    if (row.status === 'pending') return runIssuance(request, reply, row, ref);
    const failedStep = failedStepOf(row.error);
    if (row.status === 'failed' || (failedStep && row.status !== 'refused')) {
      throw executionFailed('The passport could not be issued', row.payment_transaction_id, failedStep ?? 'confirmSettlement', row.error, outcomeOfRow(row));
    }
    if (failedStep) {
      // refused because its workflow never ran: the refund is still owed
      throw executionFailed('The passport could not be issued', row.payment_transaction_id, failedStep, row.error, await refund(row.payment_transaction_id, row.error ?? failedStep));
    }
    const exists = new ApiError('passport_already_exists', `Account ${row.account_id} already has a passport or a pending request`, {
      hint: `Use GET /passport/address/${row.account_id}`,
    });
    if (row.status === 'refused') return refuseAfterSettlement(row.payment_transaction_id, exists);
    // refunded after losing a race
    throw new ApiError('passport_already_exists', exists.message, {
      hint: `${exists.hint} Your payment ${row.payment_transaction_id} was refunded.`,
      extra: { paymentTransactionId: row.payment_transaction_id, refund: 'refunded', refundTransactionId: row.refund_transaction_id },
    });
  };

  if (paymentsEnabled) {
    const payIssuance = requirePayment((request) => {
      const plan = issuancePlans.get(request)!;
      return { amountTinybars: tierPriceTinybars(plan.tier), payTo: ledger.deployment.payTo, description: `Agent passport, ${plan.tier} tier` };
    });

    app.post(
      '/passport/request',
      {
        schema: {
          tags: ['passports'],
          summary: 'Buy a passport NFT: DID signature headers + x402 payment of the tier price (HBAR)',
          description:
            'Without PAYMENT-SIGNATURE the answer is 402 with PAYMENT-REQUIRED (the signature headers are checked but the challenge is not used up, so the same request can be retried with the payment). ' +
            `If issuance takes longer than ${WORKFLOW_WAIT_MS / 1000} s the answer is 202 request_pending with a Location to poll (GET /passport/address/{accountId}).`,
          body: passportRequestBodySchema,
          response: { 200: passportIssuanceResultSchema, ...errorResponses(202, 400, 401, 402, 403, 409, 500, 502, 503) },
        },
        preHandler: async function (request, reply) {
          const body = request.body;
          await authenticate(request, body.did);
          const auth = request.auth!;
          if (!isTier(body.tier)) throw new ApiError('passport_tier_invalid', `Unknown tier ${echo(body.tier)}`, { hint: `Use one of ${TIERS.join(', ')} (GET /catalog)` });
          const tier = body.tier;
          const requested = body.capabilities ?? tierEntry(tier).capabilities;
          const unknown = requested.filter((c) => !isCapability(c));
          if (unknown.length) throw new ApiError('invalid_request', `Unknown capabilities: ${unknown.join(', ')}`, { hint: `capabilities: use values from ${CAPABILITIES.join(', ')}` });
          const outside = capabilitiesOutsideTier(tier, requested);
          if (outside.length) {
            throw new ApiError('invalid_request', `Capabilities ${outside.join(', ')} are not part of the ${tier} tier`, { hint: `capabilities: the ${tier} tier offers ${tierEntry(tier).capabilities.join(', ')}` });
          }
          const capabilities = CAPABILITIES.filter((c) => requested.includes(c));
          const plan: IssuancePlan = { tier, capabilities, ...(body.endpoint ? { endpoint: body.endpoint } : {}) };
          issuancePlans.set(request, plan);

          const paymentTxId = paymentTransactionIdOf(request);
          if (paymentTxId) {
            const earlier = await findIssuance(sql, paymentTxId);
            if (earlier) {
              if (earlier.account_id !== auth.accountId || earlier.network !== network) throw replayedPayment();
              plan.attach = earlier;
              return;
            }
            const payment = await findPaymentByTransactionId(sql, paymentTxId);
            if (payment && payment.status === 'settled') {
              const usable =
                payment.payer === auth.accountId &&
                payment.resource.endsWith('/passport/request') &&
                payment.amount_tinybars === tierPriceTinybars(tier) &&
                !(await findUpgrade(sql, paymentTxId));
              if (!usable) throw replayedPayment();
              plan.orphan = { transactionId: payment.transaction_id, payer: payment.payer, amountTinybars: payment.amount_tinybars.toString() };
              return;
            }
          }
          // refusals that must come before any money moves
          const active = await findActivePassportByAccount(sql, network, auth.accountId);
          if (active) {
            throw new ApiError('passport_already_exists', `Account ${auth.accountId} already has passport ${active.token_id}/${active.serial}`, {
              hint: `Use GET /passport/address/${auth.accountId} or upgrade with POST /passport/${active.token_id}/${active.serial}/upgrade`,
            });
          }
          const pending = await findPendingIssuance(sql, network, auth.accountId);
          if (pending && !(await releasedStaleClaim(pending))) {
            throw new ApiError('passport_already_exists', `A passport for account ${auth.accountId} is being issued`, { hint: `Poll GET /passport/address/${auth.accountId}` });
          }
          let receivable;
          try {
            receivable = await checkTokenReceivable(ledger.mirror, auth.accountId, tokenId);
          } catch {
            throw new ApiError('service_unavailable', 'The ledger mirror is unavailable', { hint: 'Retry after 30 seconds' });
          }
          if (!receivable.canReceive) {
            throw new ApiError('invalid_request', `Account ${auth.accountId} cannot receive the passport NFT ${tokenId}`, { hint: receivable.hint });
          }
          await payIssuance.call(app, request, reply);
        },
      },
      async (request, reply) => {
        const plan = issuancePlans.get(request)!;
        const auth = request.auth!;
        if (plan.attach) return resumeIssuance(request, reply, plan.attach);
        const payment = plan.orphan ?? settledRef(request);
        const claim = await claimIssuance(sql, {
          paymentTransactionId: payment.transactionId,
          workflowId: scopedWorkflowId(state, passportIssuanceWorkflowId(network, auth.accountId)),
          network,
          accountId: auth.accountId,
          did: auth.did,
          tier: plan.tier,
          capabilities: plan.capabilities,
          endpoint: plan.endpoint ?? null,
        });
        if (!claim.claimed) return resumeIssuance(request, reply, claim.row);
        return runIssuance(request, reply, claim.row, payment);
      },
    );
  }

  // ---------------------------------------------------------------- reads
  // Served from the memory cache kept current by NOTIFY (api/passportCache.ts); bodies are
  // serialised once per passport version and sent as they are.

  const cache = usePassportCache(app, sql);
  const serializePassport = serializerFor(passportSchema);
  const serializeAddress = serializerFor(addressPassportsSchema);
  const passportBodies = new Map<string, { row: PassportRow; base: string; body: string }>();
  const addressBodies = new Map<string, { version: number; base: string; body: string }>();

  app.get(
    '/passport/address/:address',
    {
      schema: {
        tags: ['passports'],
        summary: 'Passports of an owner account (active first, then revoked ones with active=false)',
        params: z.object({ address: z.string().max(128) }),
        response: { 200: addressPassportsSchema, ...errorResponses(400, 500) },
      },
    },
    async (request, reply) => {
      const raw = (request.params.address ?? '').trim(); // fastify already decoded the path parameter
      const accountId = isAccountId(raw) ? raw : parseHederaDid(raw)?.accountId;
      if (!accountId) throw new ApiError('invalid_request', 'address is missing or not an account id', { hint: 'address: expected an account id such as 0.0.1234 (or a did:hedera DID)' });
      if (!cache.isReady) await cacheReady(cache);
      const base = publicBase(ctx, request);
      const hit = addressBodies.get(accountId);
      if (hit && hit.version === cache.version && hit.base === base) return sendJson(reply, hit.body);
      const rows = passportsOfAccount(cache, accountId);
      const passports = rows.map((r) => passportJson(r, network, base));
      const body = serializeAddress({ address: accountId, passports, count: passports.length });
      if (rows.length > 0) {
        if (addressBodies.size >= 10_000) addressBodies.clear();
        addressBodies.set(accountId, { version: cache.version, base, body });
      }
      return sendJson(reply, body);
    },
  );

  app.get(
    '/passport/:tokenId/:serial',
    {
      schema: {
        tags: ['passports'],
        summary: 'One passport (404 when missing or revoked)',
        params: passportPathParams,
        response: { 200: passportSchema, ...errorResponses(400, 404, 500) },
      },
    },
    async (request, reply) => {
      const ids = parsePassportIds(request.params.tokenId, request.params.serial);
      if (!cache.isReady) await cacheReady(cache);
      const key = `${ids.tokenId}/${ids.serial}`;
      const row = cache.get(key);
      if (!row || row.revoked_at) throw notFound(ids.tokenId, ids.serial);
      const base = publicBase(ctx, request);
      const hit = passportBodies.get(key);
      if (hit && hit.row === row && hit.base === base) return sendJson(reply, hit.body);
      const body = serializePassport(passportJson(row, network, base));
      passportBodies.set(key, { row, base, body });
      return sendJson(reply, body);
    },
  );

  app.get(
    '/passports',
    {
      schema: {
        tags: ['passports'],
        summary: 'All passports of a collection (tokenId) or of a ledger network (env); paginated',
        querystring: passportsQuerySchema,
        response: { 200: passportListSchema, ...errorResponses(400, 500) },
      },
    },
    async (request) => {
      const q = request.query;
      if (!q.tokenId && !q.env) throw new ApiError('invalid_request', 'tokenId or env is required', { hint: `tokenId: e.g. ${tokenId}; env: one of ${HEDERA_NETWORKS.join(', ')}` });
      if (q.tokenId && !isEntityId(q.tokenId)) throw new ApiError('invalid_request', 'tokenId is not a token id', { hint: 'tokenId: expected shard.realm.num' });
      if (q.env && !(HEDERA_NETWORKS as readonly string[]).includes(q.env)) throw new ApiError('invalid_request', `env ${echo(q.env)} is not a ledger network`, { hint: `env: one of ${HEDERA_NETWORKS.join(', ')}` });
      if (!cache.isReady) await cacheReady(cache);
      const { rows, total } = pageOfPassports(cache, { network: q.env, tokenId: q.tokenId, limit: q.limit, offset: q.offset });
      const base = publicBase(ctx, request);
      const passports = rows.map((r) => passportJson(r, network, base));
      return { passports, count: passports.length, total, limit: q.limit, offset: q.offset };
    },
  );

  // ---------------------------------------------------------------- upgrade

  if (paymentsEnabled) {
    const payUpgrade = requirePayment(
      (request) => {
        const plan = upgradePlans.get(request)!;
        return { amountTinybars: plan.price, payTo: ledger.deployment.payTo, description: `Passport upgrade ${plan.oldTier} -> ${plan.newTier}` };
      },
      { requiredCode: 'passport_payment_required', failedCode: 'passport_payment_failed' },
    );

    const upgradeResponse = (request: FastifyRequest, r: { tokenId: string; serialNumber: number; did: string; oldTier: string; newTier: string; capabilities: string[]; accountId: string; price: string }) => ({
      upgraded: true as const,
      tokenId: r.tokenId,
      serialNumber: r.serialNumber,
      did: r.did,
      oldTier: r.oldTier,
      newTier: r.newTier,
      tier: r.newTier,
      capabilities: r.capabilities,
      pricePaidTinybars: r.price,
      hashScanLink: hashScanLink(network, publicBase(ctx, request), r.tokenId, r.serialNumber),
      _links: passportLinks(r.tokenId, r.serialNumber, r.did, r.accountId),
    });

    const runUpgrade = async (request: FastifyRequest, reply: FastifyReply, row: UpgradeRow, passport: PassportRow, payment: SettledPaymentRef) => {
      const newTier = row.new_tier as Tier;
      const input: PassportUpgradeInput = {
        tokenId: row.token_id,
        serial: Number(row.serial),
        accountId: row.account_id,
        did: passport.did,
        oldTier: row.old_tier as Tier,
        newTier,
        capabilities: [...tierEntry(newTier).capabilities],
        payment,
        ...(state.timings ? { timings: state.timings } : {}),
      };
      const run = await runClaimed<PassportUpgradeResult>(reply, 'The upgrade could not be applied', 'passportUpgrade', { paymentTransactionId: row.payment_transaction_id, workflowId: row.workflow_id }, input, `/passport/${row.token_id}/${row.serial}`);
      if ('reply' in run) return run.reply;
      const r = run.result;
      await passportChanged(sql, row.token_id, row.serial);
      if (r.status === 'refunded' || r.status === 'released') {
        throw executionFailed('The upgrade could not be applied', payment.transactionId, r.failedStep ?? 'metadata update', r.reason, outcomeOfResult(r));
      }
      return upgradeResponse(request, { ...r, accountId: row.account_id, price: payment.amountTinybars });
    };

    app.post(
      '/passport/:tokenId/:serial/upgrade',
      {
        schema: {
          tags: ['passports'],
          summary: 'Upgrade a passport in place to a higher tier: DID signature headers + x402 payment of the price difference',
          params: passportPathParams,
          body: upgradeBodySchema,
          response: { 200: upgradeResultSchema, ...errorResponses(202, 400, 401, 402, 403, 404, 500, 502, 503) },
        },
        preHandler: async function (request, reply) {
          const ids = parsePassportIds(request.params.tokenId, request.params.serial);
          await authenticate(request, request.body.did);
          const auth = request.auth!;
          const passport = await findPassport(sql, ids.tokenId, ids.serial);
          if (!passport || passport.revoked_at) throw notFound(ids.tokenId, ids.serial);
          // The holder comes from the ledger (mirror), not from PostgreSQL's copy of the owner.
          const holder = await ledger.mirror.getNftHolder(ids.tokenId, ids.serial).catch(() => {
            throw new ApiError('service_unavailable', 'The ledger mirror could not be read to check who holds the passport', { hint: 'Retry after 30 seconds' });
          });
          if (holder === null) throw notFound(ids.tokenId, ids.serial);
          if (holder !== auth.accountId) {
            throw new ApiError('passport_not_owned', `Passport ${ids.tokenId}/${ids.serial} is not owned by ${auth.did}`, { hint: `Sign with the account that owns ${ids.tokenId}/${ids.serial}` });
          }
          const requested = request.body.tier;
          if (!isTier(requested)) throw new ApiError('passport_tier_invalid', `Unknown tier ${echo(requested)}`, { hint: `Use one of ${TIERS.join(', ')} (GET /catalog)` });
          const oldTier = passport.tier as Tier;
          const paymentTxId = paymentTransactionIdOf(request);
          if (paymentTxId) {
            const earlier = await findUpgrade(sql, paymentTxId);
            if (earlier) {
              if (earlier.account_id !== auth.accountId || earlier.token_id !== ids.tokenId || Number(earlier.serial) !== ids.serial || earlier.new_tier !== requested) throw replayedPayment();
              upgradePlans.set(request, { passport, oldTier: earlier.old_tier as Tier, newTier: requested, price: 0n, attach: earlier });
              return;
            }
          }
          // one upgrade of a passport at a time, refused before any money moves (like issuance)
          const pendingUpgrade = await findPendingUpgrade(sql, ids.tokenId, ids.serial);
          if (pendingUpgrade && !(await releasedStaleClaim(pendingUpgrade))) {
            throw new ApiError('passport_upgrade_not_eligible', `An upgrade of passport ${ids.tokenId}/${ids.serial} to ${pendingUpgrade.new_tier} is in progress`, {
              hint: `Poll GET /passport/${ids.tokenId}/${ids.serial} until it shows the new tier, then request a higher one if needed`,
            });
          }
          const price = upgradePriceTinybars(oldTier, requested);
          if (price === null) {
            throw new ApiError('passport_upgrade_not_eligible', `Cannot move a ${oldTier} passport to ${requested}`, { hint: `Choose a tier above ${oldTier}` });
          }
          upgradePlans.set(request, { passport, oldTier, newTier: requested, price });
          await payUpgrade.call(app, request, reply);
        },
      },
      async (request, reply) => {
        const plan = upgradePlans.get(request)!;
        const auth = request.auth!;
        const { passport } = plan;
        const serial = Number(passport.serial);
        if (plan.attach) {
          const row = plan.attach;
          const payment = await findPaymentByTransactionId(sql, row.payment_transaction_id);
          if (!payment) throw replayedPayment();
          const ref = { transactionId: payment.transaction_id, payer: payment.payer, amountTinybars: payment.amount_tinybars.toString() };
          if (row.status === 'upgraded') {
            return upgradeResponse(request, { tokenId: row.token_id, serialNumber: serial, did: passport.did, oldTier: row.old_tier, newTier: row.new_tier, capabilities: passport.capabilities, accountId: row.account_id, price: ref.amountTinybars });
          }
          if (row.status === 'pending') return runUpgrade(request, reply, row, passport, ref);
          const failedStep = failedStepOf(row.error);
          if (row.status === 'failed' || (failedStep && row.status === 'refunded')) {
            throw executionFailed('The upgrade could not be applied', row.payment_transaction_id, failedStep ?? 'confirmSettlement', row.error, outcomeOfRow(row));
          }
          if (failedStep) throw executionFailed('The upgrade could not be applied', row.payment_transaction_id, failedStep, row.error, await refund(row.payment_transaction_id, row.error ?? failedStep));
          throw replayedPayment();
        }
        const payment = settledRef(request);
        const claim = await claimUpgrade(sql, {
          paymentTransactionId: payment.transactionId,
          workflowId: scopedWorkflowId(state, passportUpgradeWorkflowId(passport.token_id, serial, plan.newTier)),
          tokenId: passport.token_id,
          serial,
          accountId: auth.accountId,
          oldTier: plan.oldTier,
          newTier: plan.newTier,
        });
        if (!claim.claimed) {
          const refusal =
            claim.reason === 'passport_not_found'
              ? notFound(passport.token_id, serial)
              : new ApiError('passport_upgrade_not_eligible', claim.reason === 'request_pending' ? 'Another upgrade of this passport is in progress' : 'The passport changed tier meanwhile', {
                  hint: `Read GET /passport/${passport.token_id}/${serial} and choose a tier above its current one`,
                });
          return refuseAfterSettlement(payment.transactionId, refusal);
        }
        return runUpgrade(request, reply, claim.row, passport, payment);
      },
    );
  }
};

export default passportRoutes;
