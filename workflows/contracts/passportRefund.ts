/**
 * Contract of passportRefund (workflows/passportRefund.ts): started by the API for a payment whose
 * request lost a race or whose workflow could not run (api/passports/claims.ts), and by the
 * payment reconciler for a payment with no request to finish.
 */
import type { FailedStep, PassportWorkflowTimings } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** passport-refund:{paymentTransactionId} */
export function passportRefundWorkflowId(paymentTransactionId: string): string {
  return `passport-refund:${paymentTransactionId}`;
}

export interface PassportRefundInput extends Bound {
  paymentTransactionId: string;
  reason: string;
  /** the step whose failure the refund undoes, kept on the request row as data (none for a lost race) */
  failedStep?: FailedStep | 'workflow start' | 'workflow';
  timings?: PassportWorkflowTimings;
}

export type PassportRefundResult =
  | { status: 'refunded'; refundTransactionId: string; payer: string; amountTinybars: string }
  /** nothing to refund (no settled payment here or on the ledger) or the refund failed for good: the request is released ('failed') */
  | { status: 'released'; reason: string };

export const passportRefundContract = workflowContract<PassportRefundInput, PassportRefundResult>()({
  type: 'passportRefund',
  workflowId: passportRefundWorkflowId,
});
