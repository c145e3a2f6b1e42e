/**
 * passportRefund (id passport-refund:{paymentTransactionId}): pays back a settled payment whose
 * request lost a race (another issuance or upgrade claimed the wallet or passport first), so no
 * payment is ever kept without a passport.
 */
import { passportActivities } from './passportCommon.js';
import type { PassportWorkflowTimings } from './passportIds.js';

export interface PassportRefundInput {
  paymentTransactionId: string;
  reason: string;
  timings?: PassportWorkflowTimings;
}

export interface PassportRefundResult {
  status: 'refunded';
  refundTransactionId: string;
  payer: string;
  amountTinybars: string;
}

export async function passportRefund(input: PassportRefundInput): Promise<PassportRefundResult> {
  const { durable } = passportActivities(input.timings);
  const r = await durable.refundPayment({ paymentTransactionId: input.paymentTransactionId, reason: input.reason });
  return { status: 'refunded', ...r };
}
