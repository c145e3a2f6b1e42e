/**
 * The paid-request saga of passports (POST /passport/request and POST /passport/{tokenId}/{serial}/upgrade;
 * DESIGN.md 5 and 6, issue 23). The routes (api/routes/passports.ts) parse and authorise; this module
 * decides and orchestrates:
 *
 *   1. before any payment: the refusals that must come first (409 for an active passport or a pending
 *      issuance, receivability, one pending upgrade per passport) and whether the request's payment
 *      already paid for this very request (then its outcome is answered or its workflow attached to);
 *   2. the x402 gate VERIFIES the payment (api/plugins/x402.ts requireVerifiedPayment): no money moves;
 *   3. the payment is recorded ('verified') together with the request's claim, in one transaction,
 *      before any money moves; a request that cannot be claimed is refused with nothing recorded;
 *   4. the workflow is started (or attached to) with the payment; its first step SETTLES the payment
 *      through the facilitator, then mints and delivers (or upgrades), or refunds by its saga;
 *   5. the request waits at most the app's bounded wait, then throws WorkflowPending (202 request_pending
 *      with a Location, answered by the error handler).
 *
 * A crash anywhere leaves either nothing that moved, or a workflow that finishes the job, or a
 * recorded payment the payment reconciler settles (workflows/paymentReconciler.ts). A retry of the
 * same payment finds its claim and attaches to the same workflow. No claim stays pending once its
 * workflow is over: a workflow that ended without a result has its claim refused and its payment
 * refunded by passportRefund; a pending claim older than STALE_CLAIM_MS whose workflow is not
 * running is released the same way by the next request for that wallet or passport. The 502
 * execution_failed answer names failedStep (stored as data) and the refund.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { decodePaymentSignatureHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { SettleResponse } from '@x402/core/types';
import { publicBase, type AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import type { VerifiedPayment } from '../plugins/x402.js';
import { scopedWorkflowId, type WorkflowSettings } from '../workflowSettings.js';
import { hashScanLink, notFound, passportLinks } from './views.js';
import { passportChanged } from './cache.js';
import { startOrAttach, waitForResult, latestWorkflowRun, WorkflowPending, WorkflowRunFailed } from '../workflowCalls.js';
import type { Capability } from '../../domain/capabilities.js';
import { tierEntry, tierPriceTinybars, upgradePriceTinybars, type Tier } from '../../domain/tiers.js';
import { checkTokenReceivable } from '../../ledger/operations.js';
import { paymentTransactionOf } from '../../ledger/x402/verifyPayment.js';
import { normalizeTransactionId } from '../../ledger/x402/ids.js';
import { findPaymentByTransactionId, type NewPayment, type PaymentRow } from '../../db/queries/payments.js';
import {
  claimIssuance,
  findActivePassportByAccount,
  findIssuance,
  findPassport,
  findPendingIssuance,
  findPendingUpgrade,
  findUpgrade,
  markRequestRefused,
  recordIssuancePayment,
  recordUpgradePayment,
  requestLedgerWritesStarted,
  type IssuanceRow,
  type PassportRow,
  type UpgradeRow,
} from '../../db/queries/passports.js';
import type { PaymentRef } from '../../workflows/contracts/passport.js';
import { passportIssuanceContract, passportIssuanceWorkflowId, type PassportIssuanceInput } from '../../workflows/contracts/passportIssuance.js';
import { passportUpgradeContract, passportUpgradeWorkflowId, type PassportUpgradeInput } from '../../workflows/contracts/passportUpgrade.js';
import { passportRefundContract, passportRefundWorkflowId, type PassportRefundInput } from '../../workflows/contracts/passportRefund.js';
import type { InputOf, ResultOf } from '../../workflows/contracts/contract.js';
import { executionFailed, outcomeOfResult, outcomeOfRow, publicOutcome, refundSentence, replayedPayment, settlementFailed, type RefundOutcome } from './outcomes.js';
import { killPoint } from './killPoint.js';

/** A pending claim younger than this may still be starting its workflow; older and not running, it is stale. */
const STALE_CLAIM_MS = 60_000;

/** The normalised transaction id of the request's PAYMENT-SIGNATURE (the form payments are recorded under). */
export function paymentTransactionIdOf(request: FastifyRequest): string | null {
  const header = paymentSignatureOf(request);
  if (!header) return null;
  try {
    return normalizeTransactionId(paymentTransactionOf(decodePaymentSignatureHeader(header))?.transactionId?.toString());
  } catch {
    return null;
  }
}

export function paymentSignatureOf(request: FastifyRequest): string | null {
  const h = request.headers['payment-signature'];
  return typeof h === 'string' && h.length > 0 ? h : null;
}

function refOf(p: PaymentRow, request: FastifyRequest): PaymentRef {
  const paymentSignature = paymentSignatureOf(request);
  return { transactionId: p.transaction_id, payer: p.payer, amountTinybars: p.amount_tinybars.toString(), ...(paymentSignature ? { paymentSignature } : {}) };
}

function recordOf(v: VerifiedPayment): NewPayment {
  return {
    transactionId: v.transactionId,
    network: v.network,
    payer: v.payer,
    payTo: v.payTo,
    amountTinybars: v.amountTinybars,
    resource: v.resource,
    description: v.description,
    status: 'verified',
    validUntil: v.validUntil,
  };
}

export interface IssuancePlan {
  tier: Tier;
  capabilities: Capability[];
  endpoint?: string;
  /** an earlier request already claimed the wallet with this payment */
  attach?: IssuanceRow;
  /** a payment settled by an API before issue 23 that never reached a claim (that API died after settling) */
  orphan?: PaymentRef;
}

export interface UpgradePlan {
  passport: PassportRow;
  oldTier: Tier;
  newTier: Tier;
  price: bigint;
  attach?: UpgradeRow;
}

interface IssuedView {
  tokenId: string;
  serialNumber: number;
  did: string;
  tier: string;
  capabilities: string[];
  accountId: string;
}

interface UpgradedView extends Omit<IssuedView, 'tier'> {
  oldTier: string;
  newTier: string;
  price: string;
}

/** The saga of one app's paid passport requests. */
export function paidPassportRequests(ctx: AppContext, state: WorkflowSettings) {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;
  const tokenId = ledger.deployment.passportTokenId;

  const issuanceResponse = (request: FastifyRequest, r: IssuedView) => ({
    tokenId: r.tokenId,
    serialNumber: r.serialNumber,
    did: r.did,
    tier: r.tier,
    capabilities: r.capabilities,
    hashScanLink: hashScanLink(network, publicBase(ctx, request), r.tokenId, r.serialNumber),
    _links: passportLinks(r.tokenId, r.serialNumber, r.did, r.accountId),
  });

  const upgradeResponse = (request: FastifyRequest, r: UpgradedView) => ({
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

  /** PAYMENT-RESPONSE once the settlement is known (the payment row holds the facilitator's normalised answer). */
  const paymentResponse = async (reply: FastifyReply, paymentTransactionId: string): Promise<PaymentRow | null> => {
    const p = await findPaymentByTransactionId(sql, paymentTransactionId);
    if (p && (p.status === 'settled' || p.status === 'refunded') && p.settle_response) {
      reply.header('PAYMENT-RESPONSE', encodePaymentResponseHeader(p.settle_response as unknown as SettleResponse));
    }
    return p;
  };

  /**
   * Pays a settled payment back through its passportRefund workflow (one per payment; the refund
   * itself is idempotent). A refund still running after the bounded wait is the outcome 'pending'
   * (the request's answer says so), not a 202; `pollUrl` is the paid request's own.
   */
  const refund = async (paymentTransactionId: string, reason: string, pollUrl: string): Promise<RefundOutcome> => {
    const handle = await startOrAttach(ctx, passportRefundContract, scopedWorkflowId(state, passportRefundWorkflowId(paymentTransactionId)), {
      paymentTransactionId,
      reason,
      ...(state.timings ? { timings: state.timings } : {}),
    } satisfies PassportRefundInput);
    let r;
    try {
      r = await waitForResult(handle, state.workflowWaitMs, pollUrl);
    } catch (err) {
      if (err instanceof WorkflowPending) return { refund: 'pending', refundWorkflowId: handle.workflowId };
      throw err;
    }
    return outcomeOfResult(r, (await findPaymentByTransactionId(sql, paymentTransactionId))?.status ?? null);
  };

  /** Refunds a payment whose request was refused after settlement and answers with the refusal. */
  const refuseAfterSettlement = async (paymentTransactionId: string, refusal: ApiError, pollUrl: string): Promise<never> => {
    const o = await refund(paymentTransactionId, refusal.code, pollUrl);
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
  const abandonClaim = async (
    paymentTransactionId: string,
    workflowId: string,
    reason: string,
    failedStep: 'workflow start' | 'workflow',
    pollUrl: string,
  ): Promise<RefundOutcome | 'running' | 'done' | 'unfinished'> => {
    const run = await latestWorkflowRun(ctx, workflowId);
    if (!run) {
      throw new ApiError('service_unavailable', 'The workflow service is unavailable', {
        hint: `Retry the same request with the same PAYMENT-SIGNATURE after 30 seconds; your payment ${paymentTransactionId} is kept for it`,
      });
    }
    if (run.running) return 'running';
    if (await requestLedgerWritesStarted(sql, workflowId, paymentTransactionId)) return 'unfinished';
    const status = await markRequestRefused(sql, paymentTransactionId, reason, failedStep, run.runId);
    if (status === 'issued' || status === 'upgraded') return 'done';
    // a run other than the one seen ended took the claim to the ledger (beginRequestLedgerWrites): finish it, never refund
    if (status === 'pending') return 'unfinished';
    try {
      return await refund(paymentTransactionId, reason, pollUrl);
    } catch {
      throw new ApiError('service_unavailable', 'The refund could not be started', {
        hint: `Your payment ${paymentTransactionId} is owed back and nothing was issued: retry this request with the same PAYMENT-SIGNATURE after 30 seconds`,
      });
    }
  };

  /**
   * Starts (or attaches to) the workflow of a claimed request and waits a bounded time. A workflow
   * that cannot be started while its payment has not moved answers 503 (the same payment may be
   * retried; it settles once). A workflow that ended without a result has its claim abandoned and
   * refunded: 502 saying so (202 when the workflow turns out to be running after all).
   */
  const runClaimed = async <C extends typeof passportIssuanceContract | typeof passportUpgradeContract>(
    reply: FastifyReply,
    what: string,
    contract: C,
    claim: { paymentTransactionId: string; workflowId: string },
    input: InputOf<C>,
    pollUrl: string,
  ): Promise<{ result: ResultOf<C> }> => {
    // a run that ended without a result after writing to the ledger is run once more to finish
    for (let attempt = 0; ; attempt++) {
      let started = false;
      try {
        const handle = await startOrAttach(ctx, contract, claim.workflowId, input, { staticSummary: `${contract.type} paid by x402 payment ${claim.paymentTransactionId}` });
        started = true;
        killPoint(ctx.config, 'after-start');
        let r: ResultOf<C>;
        try {
          r = await waitForResult<ResultOf<C>>(handle, state.workflowWaitMs, pollUrl);
        } catch (err) {
          if (err instanceof WorkflowPending) await paymentResponse(reply, claim.paymentTransactionId);
          throw err;
        }
        killPoint(ctx.config, 'after-settle');
        return { result: r };
      } catch (err) {
        const notStarted = !started && err instanceof ApiError && err.code === 'service_unavailable';
        if (!notStarted && !(err instanceof WorkflowRunFailed)) throw err; // WorkflowPending included
        if (notStarted && (await findPaymentByTransactionId(sql, claim.paymentTransactionId))?.status === 'verified') {
          // nothing moved: the claim and the payment are kept for a retry of this request (or the reconciler)
          throw new ApiError('service_unavailable', `${what}: its workflow could not be started`, {
            hint: `Your payment ${claim.paymentTransactionId} has not been settled: retry this request with the same PAYMENT-SIGNATURE after 30 seconds (a payment settles once)`,
          });
        }
        const reason = notStarted ? 'workflow not started' : 'workflow ended without a result';
        const failedStep = notStarted ? 'workflow start' : 'workflow';
        reply.request.log.warn({ err: (err as Error).message, workflowId: claim.workflowId }, 'the workflow of a claimed request did not run to its end');
        const o = await abandonClaim(claim.paymentTransactionId, claim.workflowId, reason, failedStep, pollUrl);
        if (o === 'unfinished' && attempt === 0) continue;
        if (o === 'unfinished') {
          throw new ApiError('execution_failed', `${what}: the workflow ended twice without a result after writing to the ledger`, {
            hint: `Your payment ${claim.paymentTransactionId} is kept for this request: retry it with the same PAYMENT-SIGNATURE to finish it`,
            extra: { paymentTransactionId: claim.paymentTransactionId, failedStep: 'workflow', refund: 'none' },
          });
        }
        if (o === 'running') throw new WorkflowPending(claim.workflowId, pollUrl);
        if (o === 'done') throw new ApiError('execution_failed', `${what}: the workflow ended without a result after the request was recorded`, { hint: `Read ${pollUrl}` });
        throw executionFailed(what, claim.paymentTransactionId, failedStep, reason, o);
      }
    }
  };

  /**
   * A pending claim blocks new requests for its wallet (or passport) only while its workflow may
   * still run: one older than STALE_CLAIM_MS whose workflow is not running is abandoned and its
   * payment refunded (or released when it never moved), and true is returned (the caller may go on).
   * One whose workflow already wrote to the ledger keeps blocking: it is finished by a retry of its
   * own request (or the payment reconciler), never refunded.
   */
  const releasedStaleClaim = async (row: { payment_transaction_id: string; workflow_id: string; created_at: Date }, pollUrl: string): Promise<boolean> => {
    if (Date.now() - row.created_at.getTime() < STALE_CLAIM_MS) return false;
    const run = await latestWorkflowRun(ctx, row.workflow_id);
    if (!run || run.running) return false;
    if (await requestLedgerWritesStarted(sql, row.workflow_id, row.payment_transaction_id)) return false;
    const status = await markRequestRefused(sql, row.payment_transaction_id, 'workflow not started', 'workflow start', run.runId);
    if (status === 'pending') return false; // another run took the claim to the ledger meanwhile: it still blocks
    if (status !== 'refused') return status !== null;
    await refund(row.payment_transaction_id, 'workflow not started', pollUrl).catch(() => undefined); // a retry of that payment (or the reconciler) finishes it
    return true;
  };

  /** A request whose workflow released its claim because the payment never moved, or did not deliver. */
  const undelivered = async (
    what: string,
    paymentTransactionId: string,
    r: { status: 'refunded'; failedStep?: string; reason: string; refundTransactionId: string } | { status: 'released'; failedStep: string; reason: string },
    defaultStep: string,
    refusal?: VerifiedPayment['refusal'],
  ): Promise<never> => {
    if (r.status === 'released' && r.failedStep === 'settle') throw settlementFailed(paymentTransactionId, r.reason, refusal);
    const payment = await findPaymentByTransactionId(sql, paymentTransactionId);
    throw executionFailed(what, paymentTransactionId, r.failedStep ?? defaultStep, r.reason, outcomeOfResult(r, payment?.status ?? null));
  };

  // ---------------------------------------------------------------- issuance

  const runIssuance = async (request: FastifyRequest, reply: FastifyReply, row: IssuanceRow, payment: PaymentRef) => {
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
    const what = 'The passport could not be issued';
    const run = await runClaimed(reply, what, passportIssuanceContract, { paymentTransactionId: row.payment_transaction_id, workflowId: row.workflow_id }, input, `/passport/address/${row.account_id}`);
    const r = run.result;
    if (r.status !== 'issued') return undelivered(what, payment.transactionId, r, 'workflow', request.verifiedPayment?.refusal);
    await paymentResponse(reply, payment.transactionId);
    await passportChanged(sql, r.tokenId, r.serialNumber);
    return issuanceResponse(request, r);
  };

  /** The outcome of an issuance an earlier request already claimed with this payment. */
  const resumeIssuance = async (request: FastifyRequest, reply: FastifyReply, row: IssuanceRow) => {
    const what = 'The passport could not be issued';
    if (row.status === 'issued' && row.token_id && row.serial !== null) {
      const p = await findPassport(sql, row.token_id, row.serial);
      if (!p || p.revoked_at) throw replayedPayment();
      await paymentResponse(reply, row.payment_transaction_id);
      return issuanceResponse(request, { tokenId: p.token_id, serialNumber: Number(p.serial), did: p.did, tier: p.tier, capabilities: p.capabilities, accountId: p.account_id });
    }
    const payment = await findPaymentByTransactionId(sql, row.payment_transaction_id);
    if (!payment) throw replayedPayment();
    if (row.status === 'pending') return runIssuance(request, reply, row, refOf(payment, request));
    const failedStep = row.failed_step;
    if (failedStep === 'settle' && row.status === 'failed') throw settlementFailed(row.payment_transaction_id, row.error ?? 'the payment did not settle');
    if (row.status === 'failed' || (failedStep && row.status !== 'refused')) {
      throw executionFailed(what, row.payment_transaction_id, failedStep ?? 'confirmSettlement', row.error, outcomeOfRow(row, payment.status));
    }
    if (failedStep) {
      // refused because its workflow never ran or ended without a result: the refund is still owed
      throw executionFailed(what, row.payment_transaction_id, failedStep, row.error, await refund(row.payment_transaction_id, row.error ?? failedStep, `/passport/address/${row.account_id}`));
    }
    const exists = new ApiError('passport_already_exists', `Account ${row.account_id} already has a passport or a pending request`, {
      hint: `Use GET /passport/address/${row.account_id}`,
    });
    if (row.status === 'refused') return refuseAfterSettlement(row.payment_transaction_id, exists, `/passport/address/${row.account_id}`);
    // refunded after losing a race
    throw new ApiError('passport_already_exists', exists.message, {
      hint: `${exists.hint} Your payment ${row.payment_transaction_id} was refunded.`,
      extra: { paymentTransactionId: row.payment_transaction_id, refund: 'refunded', refundTransactionId: row.refund_transaction_id },
    });
  };

  /**
   * Before any payment: whether this request's payment already paid for it (attach), or a payment
   * settled by an older API never reached a claim (orphan); else the refusals that must come before
   * money moves. Returns whether the request still has to pay.
   */
  const prepareIssuance = async (request: FastifyRequest, auth: { accountId: string; did: string }, plan: IssuancePlan): Promise<'pay' | 'paid'> => {
    const paymentTxId = paymentTransactionIdOf(request);
    if (paymentTxId) {
      const earlier = await findIssuance(sql, paymentTxId);
      if (earlier) {
        if (earlier.account_id !== auth.accountId || earlier.network !== network) throw replayedPayment();
        plan.attach = earlier;
        return 'paid';
      }
      const payment = await findPaymentByTransactionId(sql, paymentTxId);
      if (payment && payment.status === 'settled') {
        const usable =
          payment.payer === auth.accountId &&
          payment.resource.endsWith('/passport/request') &&
          payment.amount_tinybars === tierPriceTinybars(plan.tier) &&
          !(await findUpgrade(sql, paymentTxId));
        if (!usable) throw replayedPayment();
        plan.orphan = { transactionId: payment.transaction_id, payer: payment.payer, amountTinybars: payment.amount_tinybars.toString() };
        return 'paid';
      }
    }
    const active = await findActivePassportByAccount(sql, network, auth.accountId);
    if (active) {
      throw new ApiError('passport_already_exists', `Account ${auth.accountId} already has passport ${active.token_id}/${active.serial}`, {
        hint: `Use GET /passport/address/${auth.accountId} or upgrade with POST /passport/${active.token_id}/${active.serial}/upgrade`,
      });
    }
    const pending = await findPendingIssuance(sql, network, auth.accountId);
    if (pending && !(await releasedStaleClaim(pending, `/passport/address/${auth.accountId}`))) {
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
    return 'pay';
  };

  /** The paid request: record the verified payment with the claim, start the workflow (which settles), answer. */
  const issue = async (request: FastifyRequest, reply: FastifyReply, auth: { accountId: string; did: string }, plan: IssuancePlan) => {
    if (plan.attach) return resumeIssuance(request, reply, plan.attach);
    const claim = {
      workflowId: scopedWorkflowId(state, passportIssuanceWorkflowId(network, auth.accountId)),
      network,
      accountId: auth.accountId,
      did: auth.did,
      tier: plan.tier,
      capabilities: plan.capabilities,
      endpoint: plan.endpoint ?? null,
    };
    if (plan.orphan) {
      const c = await claimIssuance(sql, { ...claim, paymentTransactionId: plan.orphan.transactionId });
      if (!c.claimed) return resumeIssuance(request, reply, c.row);
      return runIssuance(request, reply, c.row, plan.orphan);
    }
    const verified = request.verifiedPayment!;
    killPoint(ctx.config, 'after-verify');
    const recorded = await recordIssuancePayment(sql, recordOf(verified), { ...claim, paymentTransactionId: verified.transactionId });
    if (recorded.outcome === 'replayed') throw replayedPayment();
    if (recorded.outcome === 'refused') {
      // nothing recorded, no money moved
      throw new ApiError('passport_already_exists', recorded.reason === 'request_pending' ? `A passport for account ${auth.accountId} is being issued` : `Account ${auth.accountId} already has a passport`, {
        hint: `Use GET /passport/address/${auth.accountId}. Nothing was charged: payment ${verified.transactionId} was not settled.`,
      });
    }
    if (recorded.outcome === 'earlier' || recorded.row.status === 'issued') return resumeIssuance(request, reply, recorded.row);
    killPoint(ctx.config, 'after-record');
    return runIssuance(request, reply, recorded.row, { transactionId: verified.transactionId, payer: verified.payer, amountTinybars: verified.amountTinybars.toString(), paymentSignature: verified.paymentSignature });
  };

  // ---------------------------------------------------------------- upgrade

  const runUpgrade = async (request: FastifyRequest, reply: FastifyReply, row: UpgradeRow, passport: PassportRow, payment: PaymentRef) => {
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
    const what = 'The upgrade could not be applied';
    const run = await runClaimed(reply, what, passportUpgradeContract, { paymentTransactionId: row.payment_transaction_id, workflowId: row.workflow_id }, input, `/passport/${row.token_id}/${row.serial}`);
    const r = run.result;
    await passportChanged(sql, row.token_id, row.serial);
    if (r.status !== 'upgraded') return undelivered(what, payment.transactionId, r, 'metadata update', request.verifiedPayment?.refusal);
    await paymentResponse(reply, payment.transactionId);
    return upgradeResponse(request, { ...r, accountId: row.account_id, price: payment.amountTinybars });
  };

  /** The outcome of an upgrade an earlier request already claimed with this payment. */
  const resumeUpgrade = async (request: FastifyRequest, reply: FastifyReply, row: UpgradeRow, passport: PassportRow) => {
    const payment = await findPaymentByTransactionId(sql, row.payment_transaction_id);
    if (!payment) throw replayedPayment();
    const ref = refOf(payment, request);
    if (row.status === 'upgraded') {
      await paymentResponse(reply, row.payment_transaction_id);
      return upgradeResponse(request, { tokenId: row.token_id, serialNumber: Number(passport.serial), did: passport.did, oldTier: row.old_tier, newTier: row.new_tier, capabilities: passport.capabilities, accountId: row.account_id, price: ref.amountTinybars });
    }
    if (row.status === 'pending') return runUpgrade(request, reply, row, passport, ref);
    const what = 'The upgrade could not be applied';
    const failedStep = row.failed_step;
    if (failedStep === 'settle' && row.status === 'failed') throw settlementFailed(row.payment_transaction_id, row.error ?? 'the payment did not settle');
    if (row.status === 'failed' || (failedStep && row.status === 'refunded')) {
      throw executionFailed(what, row.payment_transaction_id, failedStep ?? 'confirmSettlement', row.error, outcomeOfRow(row, payment.status));
    }
    if (failedStep) throw executionFailed(what, row.payment_transaction_id, failedStep, row.error, await refund(row.payment_transaction_id, row.error ?? failedStep, `/passport/${row.token_id}/${row.serial}`));
    throw replayedPayment();
  };

  /**
   * Before any payment: whether this request's payment already paid for this upgrade (attach), else
   * the refusals that must come before money moves (one pending upgrade per passport, a priced move).
   */
  const prepareUpgrade = async (request: FastifyRequest, auth: { accountId: string }, passport: PassportRow, requested: Tier): Promise<UpgradePlan> => {
    const oldTier = passport.tier as Tier;
    const paymentTxId = paymentTransactionIdOf(request);
    if (paymentTxId) {
      const earlier = await findUpgrade(sql, paymentTxId);
      if (earlier) {
        if (earlier.account_id !== auth.accountId || earlier.token_id !== passport.token_id || Number(earlier.serial) !== Number(passport.serial) || earlier.new_tier !== requested) throw replayedPayment();
        return { passport, oldTier: earlier.old_tier as Tier, newTier: requested, price: 0n, attach: earlier };
      }
    }
    // one upgrade of a passport at a time, refused before any money moves (like issuance)
    const pendingUpgrade = await findPendingUpgrade(sql, passport.token_id, passport.serial);
    if (pendingUpgrade && !(await releasedStaleClaim(pendingUpgrade, `/passport/${passport.token_id}/${passport.serial}`))) {
      throw new ApiError('passport_upgrade_not_eligible', `An upgrade of passport ${passport.token_id}/${passport.serial} to ${pendingUpgrade.new_tier} is in progress`, {
        hint: `Poll GET /passport/${passport.token_id}/${passport.serial} until it shows the new tier, then request a higher one if needed`,
      });
    }
    const price = upgradePrice(oldTier, requested);
    return { passport, oldTier, newTier: requested, price };
  };

  /** The paid upgrade: record the verified payment with the claim, start the workflow (which settles), answer. */
  const upgrade = async (request: FastifyRequest, reply: FastifyReply, auth: { accountId: string }, plan: UpgradePlan) => {
    const { passport } = plan;
    if (plan.attach) return resumeUpgrade(request, reply, plan.attach, passport);
    const serial = Number(passport.serial);
    const verified = request.verifiedPayment!;
    killPoint(ctx.config, 'after-verify');
    const recorded = await recordUpgradePayment(sql, recordOf(verified), {
      paymentTransactionId: verified.transactionId,
      workflowId: scopedWorkflowId(state, passportUpgradeWorkflowId(passport.token_id, serial, plan.newTier)),
      tokenId: passport.token_id,
      serial,
      accountId: auth.accountId,
      oldTier: plan.oldTier,
      newTier: plan.newTier,
    });
    if (recorded.outcome === 'replayed') throw replayedPayment();
    if (recorded.outcome === 'refused') {
      const nothing = `Nothing was charged: payment ${verified.transactionId} was not settled.`;
      if (recorded.reason === 'passport_not_found') {
        const e = notFound(passport.token_id, serial);
        throw new ApiError(e.code, e.message, { hint: `${e.hint ?? ''} ${nothing}`.trim() });
      }
      throw new ApiError('passport_upgrade_not_eligible', recorded.reason === 'request_pending' ? 'Another upgrade of this passport is in progress' : 'The passport changed tier meanwhile', {
        hint: `Read GET /passport/${passport.token_id}/${serial} and choose a tier above its current one. ${nothing}`,
      });
    }
    if (recorded.outcome === 'earlier' || recorded.row.status === 'upgraded') return resumeUpgrade(request, reply, recorded.row, passport);
    killPoint(ctx.config, 'after-record');
    return runUpgrade(request, reply, recorded.row, passport, { transactionId: verified.transactionId, payer: verified.payer, amountTinybars: verified.amountTinybars.toString(), paymentSignature: verified.paymentSignature });
  };

  return { prepareIssuance, issue, prepareUpgrade, upgrade };
}

/** The price of moving a passport up (400 passport_upgrade_not_eligible for a move that is not up). */
function upgradePrice(oldTier: Tier, newTier: Tier): bigint {
  const price = upgradePriceTinybars(oldTier, newTier);
  if (price === null) throw new ApiError('passport_upgrade_not_eligible', `Cannot move a ${oldTier} passport to ${newTier}`, { hint: `Choose a tier above ${oldTier}` });
  return price;
}

export type PaidPassportRequests = ReturnType<typeof paidPassportRequests>;
