/**
 * The claims of paid passport requests (issue 23), shared by issuance (issuance.ts) and upgrade
 * (upgrade.ts): a request's payment is recorded with its claim before any money moves; the claim's
 * workflow settles the payment and issues (or upgrades), or refunds by its saga. This module runs a
 * claimed request's workflow with the app's bounded wait, and frees the claims whose workflow did not
 * run to its end:
 *
 *   runClaimed          start (or attach to) the claim's workflow and wait; a workflow that could not
 *                       start or ended without a result has its claim abandoned (abandonClaim)
 *   abandonClaim        a claim whose workflow is over without a result: refused and its payment
 *                       refunded, unless the workflow already wrote to the ledger (then run again)
 *   releasedStaleClaim  a pending claim older than STALE_CLAIM_MS whose workflow is not running is
 *                       released the same way by the next request for that wallet or passport
 *   refund              a settled payment paid back through its passportRefund workflow
 *   undelivered         the 502 (or 400) of a workflow that released its claim or refunded
 *
 * Every function takes the feature's state (`Passports`, state.ts) first.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { decodePaymentSignatureHeader, encodePaymentResponseHeader } from '@x402/core/http';
import type { SettleResponse } from '@x402/core/types';
import { ApiError } from '../errors.js';
import type { VerifiedPayment } from '../plugins/x402.js';
import { scopedWorkflowId } from '../workflowSettings.js';
import { latestWorkflowRun, startOrAttach, waitForResult, WorkflowPending, WorkflowRunFailed } from '../workflowCalls.js';
import { executionFailed, outcomeOfResult, publicOutcome, refundSentence, settlementFailed, type RefundOutcome } from './outcomes.js';
import type { Passports } from './state.js';
import { paymentTransactionOf } from '../../ledger/x402/verifyPayment.js';
import { normalizeTransactionId } from '../../ledger/x402/ids.js';
import { findPaymentByTransactionId, type NewPayment, type PaymentRow } from '../../db/queries/payments.js';
import { markRequestRefused, requestLedgerWritesStarted } from '../../db/queries/passports.js';
import type { PaymentRef } from '../../workflows/contracts/passport.js';
import type { passportIssuanceContract } from '../../workflows/contracts/passportIssuance.js';
import type { passportUpgradeContract } from '../../workflows/contracts/passportUpgrade.js';
import { passportRefundContract, passportRefundWorkflowId, type PassportRefundInput } from '../../workflows/contracts/passportRefund.js';
import type { InputOf, ResultOf } from '../../workflows/contracts/contract.js';

/** A pending claim younger than this may still be starting its workflow; older and not running, it is stale. */
const STALE_CLAIM_MS = 60_000;

/** The request's PAYMENT-SIGNATURE header, when it has one. */
export function paymentSignatureOf(request: FastifyRequest): string | null {
  const h = request.headers['payment-signature'];
  return typeof h === 'string' && h.length > 0 ? h : null;
}

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

/** The workflow's reference to a recorded payment (with the request's PAYMENT-SIGNATURE, which the workflow settles). */
export function paymentRefOf(p: PaymentRow, request: FastifyRequest): PaymentRef {
  const paymentSignature = paymentSignatureOf(request);
  return { transactionId: p.transaction_id, payer: p.payer, amountTinybars: p.amount_tinybars.toString(), ...(paymentSignature ? { paymentSignature } : {}) };
}

/** The workflow's reference to the payment the x402 gate just verified. */
export function verifiedPaymentRef(v: VerifiedPayment): PaymentRef {
  return { transactionId: v.transactionId, payer: v.payer, amountTinybars: v.amountTinybars.toString(), paymentSignature: v.paymentSignature };
}

/** The payments row of a verified payment, recorded with the request's claim. */
export function paymentRecordOf(v: VerifiedPayment): NewPayment {
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

/** PAYMENT-RESPONSE once the settlement is known (the payment row holds the facilitator's normalised answer). */
export async function paymentResponse(p: Passports, reply: FastifyReply, paymentTransactionId: string): Promise<PaymentRow | null> {
  const payment = await findPaymentByTransactionId(p.sql, paymentTransactionId);
  if (payment && (payment.status === 'settled' || payment.status === 'refunded') && payment.settle_response) {
    reply.header('PAYMENT-RESPONSE', encodePaymentResponseHeader(payment.settle_response as unknown as SettleResponse));
  }
  return payment;
}

/**
 * Pays a settled payment back through its passportRefund workflow (one per payment; the refund
 * itself is idempotent). A refund still running after the bounded wait is the outcome 'pending',
 * said in the answer of the request (`pollUrl`, that request's own), not a 202.
 */
export async function refund(p: Passports, paymentTransactionId: string, reason: string, pollUrl: string): Promise<RefundOutcome> {
  const workflowId = scopedWorkflowId(p.settings, passportRefundWorkflowId(paymentTransactionId));
  const input: PassportRefundInput = { paymentTransactionId, reason, ...(p.settings.timings ? { timings: p.settings.timings } : {}) };
  const handle = await startOrAttach(p.ctx, passportRefundContract, workflowId, input);
  let r;
  try {
    r = await waitForResult(handle, p.settings.workflowWaitMs, pollUrl);
  } catch (err) {
    if (err instanceof WorkflowPending) return { refund: 'pending', refundWorkflowId: handle.workflowId };
    throw err;
  }
  return outcomeOfResult(r, (await findPaymentByTransactionId(p.sql, paymentTransactionId))?.status ?? null);
}

/** Refunds a payment whose request was refused after settlement and answers with the refusal. */
export async function refuseAfterSettlement(p: Passports, paymentTransactionId: string, refusal: ApiError, pollUrl: string): Promise<never> {
  const o = await refund(p, paymentTransactionId, refusal.code, pollUrl);
  throw new ApiError(refusal.code, refusal.message, {
    hint: `${refusal.hint ?? ''} ${refundSentence(paymentTransactionId, o)}`.trim(),
    status: refusal.status,
    extra: { paymentTransactionId, ...publicOutcome(o) },
  });
}

/** A claim: its payment and the workflow (issuance or upgrade) that settles it and does the job. */
export interface Claim {
  paymentTransactionId: string;
  workflowId: string;
}

/**
 * Turns a claim whose workflow never ran, or ended without a result (failed, terminated, timed
 * out), into a refusal (the wallet or passport is free at once) and refunds its payment. Returns
 * 'running' when the workflow runs after all, 'done' when the request had already finished, and
 * 'unfinished' when the workflow already wrote to the ledger for this payment: such a request is
 * finished by running its (idempotent) workflow again, never refunded.
 */
export async function abandonClaim(
  p: Passports,
  claim: Claim,
  why: { reason: string; failedStep: 'workflow start' | 'workflow' },
  pollUrl: string,
): Promise<RefundOutcome | 'running' | 'done' | 'unfinished'> {
  const { paymentTransactionId, workflowId } = claim;
  const run = await latestWorkflowRun(p.ctx, workflowId);
  if (!run) {
    throw new ApiError('service_unavailable', 'The workflow service is unavailable', {
      hint: `Retry the same request with the same PAYMENT-SIGNATURE after 30 seconds; your payment ${paymentTransactionId} is kept for it`,
    });
  }
  if (run.running) return 'running';
  if (await requestLedgerWritesStarted(p.sql, workflowId, paymentTransactionId)) return 'unfinished';
  const status = await markRequestRefused(p.sql, paymentTransactionId, why.reason, why.failedStep, run.runId);
  if (status === 'issued' || status === 'upgraded') return 'done';
  // a run other than the one seen ended took the claim to the ledger (beginRequestLedgerWrites): finish it, never refund
  if (status === 'pending') return 'unfinished';
  try {
    return await refund(p, paymentTransactionId, why.reason, pollUrl);
  } catch {
    throw new ApiError('service_unavailable', 'The refund could not be started', {
      hint: `Your payment ${paymentTransactionId} is owed back and nothing was issued: retry this request with the same PAYMENT-SIGNATURE after 30 seconds`,
    });
  }
}

type ClaimContract = typeof passportIssuanceContract | typeof passportUpgradeContract;

/** What the request answers (`what`: its failure sentence) and where it is polled (`pollUrl`: the Location of its 202). */
export interface ClaimedRequest {
  what: string;
  pollUrl: string;
}

/**
 * Starts (or attaches to) the workflow of a claimed request and waits the bounded time (then
 * WorkflowPending, with PAYMENT-RESPONSE once the payment is settled). A workflow that cannot be
 * started while its payment has not moved answers 503 (the same payment may be retried; it settles
 * once). A workflow that ended without a result has its claim abandoned and refunded: 502 saying so
 * (202 when the workflow turns out to be running after all); one that ended so after writing to the
 * ledger is run once more to finish.
 */
export async function runClaimed<C extends ClaimContract>(p: Passports, reply: FastifyReply, contract: C, claim: Claim, input: InputOf<C>, req: ClaimedRequest): Promise<ResultOf<C>> {
  for (let attempt = 0; ; attempt++) {
    let started = false;
    try {
      const handle = await startOrAttach(p.ctx, contract, claim.workflowId, input, { staticSummary: `${contract.type} paid by x402 payment ${claim.paymentTransactionId}` });
      started = true;
      p.killPoint('after-start');
      const r = await waitForResult<ResultOf<C>>(handle, p.settings.workflowWaitMs, req.pollUrl).catch(async (err: unknown) => {
        if (err instanceof WorkflowPending) await paymentResponse(p, reply, claim.paymentTransactionId);
        throw err;
      });
      p.killPoint('after-settle');
      return r;
    } catch (err) {
      const notStarted = !started && err instanceof ApiError && err.code === 'service_unavailable';
      if (!notStarted && !(err instanceof WorkflowRunFailed)) throw err; // WorkflowPending included
      const again = await afterUnfinishedRun(p, reply, claim, req, notStarted, err as Error);
      if (again && attempt === 0) continue;
      throw new ApiError('execution_failed', `${req.what}: the workflow ended twice without a result after writing to the ledger`, {
        hint: `Your payment ${claim.paymentTransactionId} is kept for this request: retry it with the same PAYMENT-SIGNATURE to finish it`,
        extra: { paymentTransactionId: claim.paymentTransactionId, failedStep: 'workflow', refund: 'none' },
      });
    }
  }
}

/**
 * A claimed request's workflow did not start, or ended without a result: throws the answer (503 when
 * nothing moved, 202 when it runs after all, 502 with the refund), or returns true when the workflow
 * already wrote to the ledger and is to be run again.
 */
async function afterUnfinishedRun(p: Passports, reply: FastifyReply, claim: Claim, req: ClaimedRequest, notStarted: boolean, err: Error): Promise<true> {
  if (notStarted && (await findPaymentByTransactionId(p.sql, claim.paymentTransactionId))?.status === 'verified') {
    // nothing moved: the claim and the payment are kept for a retry of this request (or the reconciler)
    throw new ApiError('service_unavailable', `${req.what}: its workflow could not be started`, {
      hint: `Your payment ${claim.paymentTransactionId} has not been settled: retry this request with the same PAYMENT-SIGNATURE after 30 seconds (a payment settles once)`,
    });
  }
  const why = notStarted ? ({ reason: 'workflow not started', failedStep: 'workflow start' } as const) : ({ reason: 'workflow ended without a result', failedStep: 'workflow' } as const);
  reply.request.log.warn({ err: err.message, workflowId: claim.workflowId }, 'the workflow of a claimed request did not run to its end');
  const o = await abandonClaim(p, claim, why, req.pollUrl);
  if (o === 'unfinished') return true;
  if (o === 'running') throw new WorkflowPending(claim.workflowId, req.pollUrl);
  if (o === 'done') throw new ApiError('execution_failed', `${req.what}: the workflow ended without a result after the request was recorded`, { hint: `Read ${req.pollUrl}` });
  throw executionFailed(req.what, claim.paymentTransactionId, why.failedStep, why.reason, o);
}

/**
 * A pending claim blocks new requests for its wallet (or passport) only while its workflow may
 * still run: one older than STALE_CLAIM_MS whose workflow is not running is abandoned and its
 * payment refunded (or released when it never moved), and true is returned (the caller may go on).
 * One whose workflow already wrote to the ledger keeps blocking: it is finished by a retry of its
 * own request (or the payment reconciler), never refunded.
 */
export async function releasedStaleClaim(p: Passports, row: { payment_transaction_id: string; workflow_id: string; created_at: Date }, pollUrl: string): Promise<boolean> {
  if (Date.now() - row.created_at.getTime() < STALE_CLAIM_MS) return false;
  const run = await latestWorkflowRun(p.ctx, row.workflow_id);
  if (!run || run.running) return false;
  if (await requestLedgerWritesStarted(p.sql, row.workflow_id, row.payment_transaction_id)) return false;
  const status = await markRequestRefused(p.sql, row.payment_transaction_id, 'workflow not started', 'workflow start', run.runId);
  if (status === 'pending') return false; // another run took the claim to the ledger meanwhile: it still blocks
  if (status !== 'refused') return status !== null;
  await refund(p, row.payment_transaction_id, 'workflow not started', pollUrl).catch(() => undefined); // a retry of that payment (or the reconciler) finishes it
  return true;
}

/** The workflow result of a request that did not deliver: it released its claim (the payment never moved) or refunded. */
export type UndeliveredResult = { status: 'refunded'; failedStep?: string; reason: string; refundTransactionId: string } | { status: 'released'; failedStep: string; reason: string };

/** Throws the answer of a request whose workflow released its claim because the payment never moved, or did not deliver. */
export async function undelivered(p: Passports, what: string, paymentTransactionId: string, r: UndeliveredResult, defaultStep: string, refusal?: VerifiedPayment['refusal']): Promise<never> {
  if (r.status === 'released' && r.failedStep === 'settle') throw settlementFailed(paymentTransactionId, r.reason, refusal);
  const payment = await findPaymentByTransactionId(p.sql, paymentTransactionId);
  throw executionFailed(what, paymentTransactionId, r.failedStep ?? defaultStep, r.reason, outcomeOfResult(r, payment?.status ?? null));
}
