/**
 * passportRefund (id passport-refund:{paymentTransactionId}): pays back a settled payment whose
 * request lost a race (another issuance or upgrade claimed the wallet or passport first), so no
 * payment is ever kept without a passport. Also started by the API when an issuance or upgrade
 * claimed its payment but its workflow could not be started or ended without a result.
 */
import { patched } from '@temporalio/workflow';
import { failureReason, isActivityFailure, passportActivities } from './passportCommon.js';
import type { PassportWorkflowTimings } from './passportIds.js';

export interface PassportRefundInput {
  paymentTransactionId: string;
  reason: string;
  timings?: PassportWorkflowTimings;
}

export type PassportRefundResult =
  | { status: 'refunded'; refundTransactionId: string; payer: string; amountTinybars: string }
  /** nothing to refund (no settled payment here or on the ledger) or the refund failed for good: the request is released ('failed') */
  | { status: 'released'; reason: string };

export async function passportRefund(input: PassportRefundInput): Promise<PassportRefundResult> {
  const { durable } = passportActivities(input.timings);
  try {
    const r = await durable.refundPayment({ paymentTransactionId: input.paymentTransactionId, reason: input.reason });
    return { status: 'refunded', ...r };
  } catch (err) {
    // before the patch the workflow failed and the request it paid for stayed pending
    if (!isActivityFailure(err) || !patched('refund-releases-request-without-settled-payment')) throw err;
    const reason = `${input.reason}; not refunded: ${failureReason(err)}`;
    await durable.releaseClaim({ paymentTransactionId: input.paymentTransactionId, reason });
    return { status: 'released', reason };
  }
}
