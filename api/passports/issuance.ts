/**
 * Buying a passport (POST /passport/request; DESIGN.md 5 and 6, issue 23). The route
 * (api/routes/passports.ts) authenticates, applies domain/tiers.ts issuanceRefusal and runs the x402
 * gate; this module decides and orchestrates, in order:
 *
 *   1. prepareIssuance, before any payment: the refusals that must come first (409 for an active
 *      passport or a pending issuance, receivability) and whether the request's payment already paid
 *      for this very request (then its outcome is answered or its workflow attached to);
 *   2. the x402 gate VERIFIES the payment (api/plugins/x402.ts verifyPayment): no money moves;
 *   3. issue: the payment is recorded ('verified') together with the request's claim, in one
 *      transaction, before any money moves; a request that cannot be claimed is refused with nothing
 *      recorded;
 *   4. the passportIssuance workflow is started (or attached to) with the payment (claims.ts
 *      runClaimed); its first step SETTLES the payment through the facilitator, then mints and
 *      delivers, or refunds by its saga;
 *   5. the request waits at most the app's bounded wait, then WorkflowPending (202 with a Location).
 *
 * A crash anywhere leaves either nothing that moved, or a workflow that finishes the job, or a
 * recorded payment the payment reconciler settles (workflows/paymentReconciler.ts). A retry of the
 * same payment finds its claim and attaches to the same workflow (resumeIssuance).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { publicBase } from '../context.js';
import { ApiError } from '../errors.js';
import type { PaymentTerms } from '../plugins/x402.js';
import { scopedWorkflowId } from '../workflowSettings.js';
import { hashScanLink, passportLinks } from './views.js';
import { passportChanged } from './cache.js';
import { executionFailed, outcomeOfRow, replayedPayment, settlementFailed } from './outcomes.js';
import { paymentRecordOf, paymentRefOf, paymentResponse, paymentTransactionIdOf, refund, refuseAfterSettlement, releasedStaleClaim, runClaimed, undelivered, verifiedPaymentRef } from './claims.js';
import type { Passports } from './state.js';
import type { Capability } from '../../domain/capabilities.js';
import { tierPriceTinybars, type Tier } from '../../domain/tiers.js';
import { checkTokenReceivable } from '../../ledger/operations.js';
import { findPaymentByTransactionId } from '../../db/queries/payments.js';
import { claimIssuance, findActivePassportByAccount, findIssuance, findPassport, findPendingIssuance, findUpgrade, recordIssuancePayment, type IssuanceRow } from '../../db/queries/passports.js';
import type { PaymentRef } from '../../workflows/contracts/passport.js';
import { passportIssuanceContract, passportIssuanceWorkflowId, type PassportIssuanceInput } from '../../workflows/contracts/passportIssuance.js';

/** The signer of a passport request (checked by the route's DID signature). */
export interface Signer {
  accountId: string;
  did: string;
}

/** What the request asks for (checked by domain/tiers.ts issuanceRefusal) and what prepareIssuance found. */
export interface IssuancePlan {
  tier: Tier;
  capabilities: Capability[];
  endpoint?: string;
  /** an earlier request already claimed the wallet with this payment */
  attach?: IssuanceRow;
  /** a payment settled by an API before issue 23 that never reached a claim (that API died after settling) */
  orphan?: PaymentRef;
}

interface IssuedView {
  tokenId: string;
  serialNumber: number;
  did: string;
  tier: string;
  capabilities: string[];
  accountId: string;
}

const WHAT = 'The passport could not be issued';

/** Where an issuance is polled: the passports of the wallet. */
const addressUrl = (accountId: string) => `/passport/address/${accountId}`;

function issuanceResponse(p: Passports, request: FastifyRequest, r: IssuedView) {
  return {
    tokenId: r.tokenId,
    serialNumber: r.serialNumber,
    did: r.did,
    tier: r.tier,
    capabilities: r.capabilities,
    hashScanLink: hashScanLink(p.network, publicBase(p.ctx, request), r.tokenId, r.serialNumber),
    _links: passportLinks(r.tokenId, r.serialNumber, r.did, r.accountId),
  };
}

/** The x402 terms of an issuance: the tier's price to the deployment's payTo. */
export function issuanceTerms(p: Passports, plan: IssuancePlan): PaymentTerms {
  return { amountTinybars: tierPriceTinybars(plan.tier), payTo: p.ledger.deployment.payTo, description: `Agent passport, ${plan.tier} tier` };
}

/**
 * Before any payment: whether this request's payment already paid for it (attach), or a payment
 * settled by an older API never reached a claim (orphan); else the refusals that must come before
 * money moves. Returns the plan with what was found, and whether the request still has to pay.
 */
export async function prepareIssuance(p: Passports, request: FastifyRequest, auth: Signer, plan: IssuancePlan): Promise<{ plan: IssuancePlan; pay: boolean }> {
  const paymentTransactionId = paymentTransactionIdOf(request);
  if (paymentTransactionId) {
    const earlier = await findIssuance(p.sql, paymentTransactionId);
    if (earlier) {
      if (earlier.account_id !== auth.accountId || earlier.network !== p.network) throw replayedPayment();
      return { plan: { ...plan, attach: earlier }, pay: false };
    }
    const orphan = await orphanPayment(p, paymentTransactionId, auth, plan.tier);
    if (orphan) return { plan: { ...plan, orphan }, pay: false };
  }
  const active = await findActivePassportByAccount(p.sql, p.network, auth.accountId);
  if (active) {
    throw new ApiError('passport_already_exists', `Account ${auth.accountId} already has passport ${active.token_id}/${active.serial}`, {
      hint: `Use GET /passport/address/${auth.accountId} or upgrade with POST /passport/${active.token_id}/${active.serial}/upgrade`,
    });
  }
  const pending = await findPendingIssuance(p.sql, p.network, auth.accountId);
  if (pending && !(await releasedStaleClaim(p, pending, addressUrl(auth.accountId)))) {
    throw new ApiError('passport_already_exists', `A passport for account ${auth.accountId} is being issued`, { hint: `Poll GET /passport/address/${auth.accountId}` });
  }
  let receivable;
  try {
    receivable = await checkTokenReceivable(p.ledger.mirror, auth.accountId, p.tokenId);
  } catch {
    throw new ApiError('service_unavailable', 'The ledger mirror is unavailable', { hint: 'Retry after 30 seconds' });
  }
  if (!receivable.canReceive) {
    throw new ApiError('invalid_request', `Account ${auth.accountId} cannot receive the passport NFT ${p.tokenId}`, { hint: receivable.hint });
  }
  return { plan, pay: true };
}

/** A payment settled by an API before issue 23 that never reached a claim, usable for this request; null when the payment is not settled. */
async function orphanPayment(p: Passports, paymentTransactionId: string, auth: Signer, tier: Tier): Promise<PaymentRef | null> {
  const payment = await findPaymentByTransactionId(p.sql, paymentTransactionId);
  if (!payment || payment.status !== 'settled') return null;
  const usable =
    payment.payer === auth.accountId &&
    payment.resource.endsWith('/passport/request') &&
    payment.amount_tinybars === tierPriceTinybars(tier) &&
    !(await findUpgrade(p.sql, paymentTransactionId));
  if (!usable) throw replayedPayment();
  return { transactionId: payment.transaction_id, payer: payment.payer, amountTinybars: payment.amount_tinybars.toString() };
}

/** The paid request: record the verified payment with the claim, start the workflow (which settles), answer. */
export async function issue(p: Passports, request: FastifyRequest, reply: FastifyReply, auth: Signer, plan: IssuancePlan) {
  if (plan.attach) return resumeIssuance(p, request, reply, plan.attach);
  const claim = {
    workflowId: scopedWorkflowId(p.settings, passportIssuanceWorkflowId(p.network, auth.accountId)),
    network: p.network,
    accountId: auth.accountId,
    did: auth.did,
    tier: plan.tier,
    capabilities: plan.capabilities,
    endpoint: plan.endpoint ?? null,
  };
  if (plan.orphan) {
    const c = await claimIssuance(p.sql, { ...claim, paymentTransactionId: plan.orphan.transactionId });
    if (!c.claimed) return resumeIssuance(p, request, reply, c.row);
    return runIssuance(p, request, reply, c.row, plan.orphan);
  }
  const verified = request.verifiedPayment!;
  p.killPoint('after-verify');
  const recorded = await recordIssuancePayment(p.sql, paymentRecordOf(verified), { ...claim, paymentTransactionId: verified.transactionId });
  if (recorded.outcome === 'replayed') throw replayedPayment();
  if (recorded.outcome === 'refused') {
    // nothing recorded, no money moved
    throw new ApiError('passport_already_exists', recorded.reason === 'request_pending' ? `A passport for account ${auth.accountId} is being issued` : `Account ${auth.accountId} already has a passport`, {
      hint: `Use GET /passport/address/${auth.accountId}. Nothing was charged: payment ${verified.transactionId} was not settled.`,
    });
  }
  if (recorded.outcome === 'earlier' || recorded.row.status === 'issued') return resumeIssuance(p, request, reply, recorded.row);
  p.killPoint('after-record');
  return runIssuance(p, request, reply, recorded.row, verifiedPaymentRef(verified));
}

/** Runs the claimed issuance's workflow and answers the passport it issued. */
async function runIssuance(p: Passports, request: FastifyRequest, reply: FastifyReply, row: IssuanceRow, payment: PaymentRef) {
  const input: PassportIssuanceInput = {
    network: row.network,
    accountId: row.account_id,
    did: row.did,
    tier: row.tier as Tier,
    capabilities: row.capabilities as Capability[],
    ...(row.endpoint ? { endpoint: row.endpoint } : {}),
    payment,
    ...(p.settings.timings ? { timings: p.settings.timings } : {}),
  };
  const claim = { paymentTransactionId: row.payment_transaction_id, workflowId: row.workflow_id };
  const r = await runClaimed(p, reply, passportIssuanceContract, claim, input, { what: WHAT, pollUrl: addressUrl(row.account_id) });
  if (r.status !== 'issued') return undelivered(p, WHAT, payment.transactionId, r, 'workflow', request.verifiedPayment?.refusal);
  await paymentResponse(p, reply, payment.transactionId);
  await passportChanged(p.sql, r.tokenId, r.serialNumber);
  return issuanceResponse(p, request, r);
}

/** The outcome of an issuance an earlier request already claimed with this payment. */
async function resumeIssuance(p: Passports, request: FastifyRequest, reply: FastifyReply, row: IssuanceRow) {
  if (row.status === 'issued' && row.token_id && row.serial !== null) {
    const passport = await findPassport(p.sql, row.token_id, row.serial);
    if (!passport || passport.revoked_at) throw replayedPayment();
    await paymentResponse(p, reply, row.payment_transaction_id);
    return issuanceResponse(p, request, { tokenId: passport.token_id, serialNumber: Number(passport.serial), did: passport.did, tier: passport.tier, capabilities: passport.capabilities, accountId: passport.account_id });
  }
  const payment = await findPaymentByTransactionId(p.sql, row.payment_transaction_id);
  if (!payment) throw replayedPayment();
  if (row.status === 'pending') return runIssuance(p, request, reply, row, paymentRefOf(payment, request));
  const failedStep = row.failed_step;
  if (failedStep === 'settle' && row.status === 'failed') throw settlementFailed(row.payment_transaction_id, row.error ?? 'the payment did not settle');
  if (row.status === 'failed' || (failedStep && row.status !== 'refused')) {
    throw executionFailed(WHAT, row.payment_transaction_id, failedStep ?? 'confirmSettlement', row.error, outcomeOfRow(row, payment.status));
  }
  const pollUrl = addressUrl(row.account_id);
  if (failedStep) {
    // refused because its workflow never ran or ended without a result: the refund is still owed
    throw executionFailed(WHAT, row.payment_transaction_id, failedStep, row.error, await refund(p, row.payment_transaction_id, row.error ?? failedStep, pollUrl));
  }
  const exists = new ApiError('passport_already_exists', `Account ${row.account_id} already has a passport or a pending request`, {
    hint: `Use GET /passport/address/${row.account_id}`,
  });
  if (row.status === 'refused') return refuseAfterSettlement(p, row.payment_transaction_id, exists, pollUrl);
  // refunded after losing a race
  throw new ApiError('passport_already_exists', exists.message, {
    hint: `${exists.hint} Your payment ${row.payment_transaction_id} was refunded.`,
    extra: { paymentTransactionId: row.payment_transaction_id, refund: 'refunded', refundTransactionId: row.refund_transaction_id },
  });
}
