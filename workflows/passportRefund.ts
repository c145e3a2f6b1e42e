/**
 * passportRefund (id passport-refund:{paymentTransactionId}): pays back a settled payment whose
 * request lost a race (another issuance or upgrade claimed the wallet or passport first), so no
 * payment is ever kept without a passport. Also started by the API when an issuance or upgrade
 * claimed its payment but its workflow could not be started or ended without a result, and by the
 * payment reconciler for a payment with no request to finish. A payment that never moved (nothing
 * on the ledger once it can no longer get there) is not refunded: its request is released.
 */
import { patched } from '@temporalio/workflow';
import { failureReason, isActivityFailure, passportActivities } from './passportCommon.js';
import type { PassportRefundInput, PassportRefundResult } from './contracts/passportRefund.js';
import { requireBoundStart } from './binding.js';

export async function passportRefund(input: PassportRefundInput): Promise<PassportRefundResult> {
  requireBoundStart(input, 'passportRefund'); // an input written for another workflow starts nothing (issue 26)
  const { durable } = passportActivities(input.timings);
  try {
    const r = await durable.refundPayment({ paymentTransactionId: input.paymentTransactionId, reason: input.reason, ...(input.failedStep ? { failedStep: input.failedStep } : {}) });
    return { status: 'refunded', ...r };
  } catch (err) {
    // before the patch the workflow failed and the request it paid for stayed pending
    if (!isActivityFailure(err) || !patched('refund-releases-request-without-settled-payment')) throw err;
    const reason = `${input.reason}; not refunded: ${failureReason(err)}`;
    await durable.releaseClaim({ paymentTransactionId: input.paymentTransactionId, reason, ...(input.failedStep ? { failedStep: input.failedStep } : {}) });
    return { status: 'released', reason };
  }
}
