/**
 * The answers of a paid passport request that did not get what it paid for: which step failed (data
 * from the workflow result or the claim row's failed_step, never parsed from text) and what became of
 * the payment (refunded, being refunded, nothing taken).
 */
import { ApiError } from '../errors.js';

/** What happened to the payment of a request that did not get what it paid for. */
export type RefundOutcome =
  | { refund: 'refunded'; refundTransactionId: string }
  | { refund: 'pending'; refundWorkflowId: string }
  /** why: the release reason ("...; not refunded: <failure>"), for the hint only; settled: whether the payment ever moved */
  | { refund: 'none'; why?: string | null; settled?: boolean };

/** The refund outcome of a workflow result that did not deliver (`paymentStatus`: the payment's status now, when read). */
export function outcomeOfResult(r: { status: 'refunded'; refundTransactionId: string } | { status: 'released'; reason: string }, paymentStatus?: string | null): RefundOutcome {
  if (r.status === 'refunded') return { refund: 'refunded', refundTransactionId: r.refundTransactionId };
  return { refund: 'none', why: r.reason, settled: paymentStatus === undefined ? undefined : paymentStatus === 'settled' };
}

/** The refund outcome recorded on a finished request row (and its payment's status). */
export function outcomeOfRow(row: { status: string; refund_transaction_id: string | null; error: string | null }, paymentStatus?: string | null): RefundOutcome {
  if (row.status === 'refunded' && row.refund_transaction_id) return { refund: 'refunded', refundTransactionId: row.refund_transaction_id };
  return { refund: 'none', why: row.error, settled: paymentStatus === undefined ? undefined : paymentStatus === 'settled' };
}

export function refundSentence(paymentTransactionId: string, o: RefundOutcome): string {
  if (o.refund === 'refunded') return `Your payment ${paymentTransactionId} was refunded in ${o.refundTransactionId}.`;
  if (o.refund === 'pending') {
    return `Your payment ${paymentTransactionId} is being refunded (workflow ${o.refundWorkflowId}); retry this request with the same PAYMENT-SIGNATURE to read the refund transaction.`;
  }
  if (o.settled === false || (o.settled === undefined && !o.why)) return `No settled payment ${paymentTransactionId} was found (here or on the ledger), so nothing was taken and nothing refunded.`;
  return `Your payment ${paymentTransactionId} could not be refunded automatically${o.why ? ` (${o.why.slice(-160)})` : ''}; the payment reconciler retries it; quote its id to the operator if it does not arrive.`;
}

/** The outcome as it goes into an error body (the release reason stays in the hint). */
export function publicOutcome(o: RefundOutcome): Record<string, string> {
  if (o.refund === 'refunded') return { refund: o.refund, refundTransactionId: o.refundTransactionId };
  if (o.refund === 'pending') return { refund: o.refund, refundWorkflowId: o.refundWorkflowId };
  return { refund: 'none' };
}

/** 502 for a paid request whose workflow did not deliver: which step failed and what happened to the payment. */
export function executionFailed(what: string, paymentTransactionId: string, failedStep: string, reason: string | null, o: RefundOutcome): ApiError {
  return new ApiError('execution_failed', `${what}: ${failedStep} failed`, {
    hint: `${reason && !(o.refund === 'none' && o.why === reason) ? `${reason.slice(0, 200)}. ` : ''}${refundSentence(paymentTransactionId, o)} Retry with a new payment.`,
    extra: { paymentTransactionId, failedStep, ...publicOutcome(o) },
  });
}

/** 400 for a payment whose settlement failed for good: nothing moved on the ledger. */
export function settlementFailed(paymentTransactionId: string, reason: string, refusal?: (message: string, hint: string) => ApiError): ApiError {
  const message = `Settlement failed: ${reason.replace(/^settle failed: /, '').slice(0, 300)}`;
  const hint = `Nothing was taken: payment ${paymentTransactionId} did not move on the ledger. Build a new payment (check the paying account's balance) and retry.`;
  return refusal ? refusal(message, hint) : new ApiError('passport_payment_failed', message, { hint, extra: { paymentTransactionId, failedStep: 'settle', refund: 'none' } });
}

export function replayedPayment(): ApiError {
  return new ApiError('passport_payment_failed', 'This payment was already used', {
    hint: 'A payment pays for one request; build a new payment (new transaction id) for this one',
  });
}
