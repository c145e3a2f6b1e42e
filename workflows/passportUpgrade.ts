/**
 * passportUpgrade (id passport-upgrade:{tokenId}:{serial}:{tier}). The API verified the x402 payment
 * of the price difference and recorded it with its claim of the passport before starting it; no money
 * moved yet (issue 23).
 *
 *   settlePayment (released with nothing taken when it fails for good) -> confirmSettlement
 *   -> updatePassportMetadata (in place) -> publishAudit (passport.upgraded) -> recordUpgrade (projection)
 *
 * Saga: when the metadata update fails for good the difference is refunded. When confirmSettlement
 * refuses, the difference is refunded too, or the claim released when no settled payment exists.
 * Histories recorded before issue 23 start with confirmSettlement (patched(SETTLE_IN_WORKFLOW_PATCH)).
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import { confirmSettlementOrUndo, failureReason, isActivityFailure, passportActivities, settleOrUndo, SETTLE_IN_WORKFLOW_PATCH, upgradeTerms } from './passportCommon.js';
import { requireBoundStart } from './binding.js';
import type { PassportUpgradeInput, PassportUpgradeResult } from './contracts/passportUpgrade.js';

export async function passportUpgrade(input: PassportUpgradeInput): Promise<PassportUpgradeResult> {
  // an input written for another workflow starts nothing; the run acts on its own claim only (issue 26)
  requireBoundStart(input, 'passportUpgrade');
  const { steps, durable } = passportActivities(input.timings);
  const payment = input.payment;
  const terms = await upgradeTerms(durable, input);
  if (patched(SETTLE_IN_WORKFLOW_PATCH)) {
    const unsettled = await settleOrUndo(durable, payment);
    if (unsettled) return unsettled;
  }
  const unconfirmed = await confirmSettlementOrUndo(durable, payment);
  if (unconfirmed) return unconfirmed;

  const keyBase = `${workflowInfo().workflowId}/${payment.transactionId}`;
  let updated: { transactionId: string };
  try {
    // the passport's own collection: after a migration (bootstrap:network --new-collection) older passports live in the previous one
    updated = await steps.updatePassportMetadata({ idempotencyKey: `${keyBase}/metadata`, tokenId: terms.tokenId, serial: terms.serial, tier: terms.newTier, capabilities: terms.capabilities });
  } catch (err) {
    if (!isActivityFailure(err)) throw err;
    const reason = `metadata update failed: ${failureReason(err)}`;
    const refund = await durable.refundPayment({ paymentTransactionId: payment.transactionId, reason, failedStep: 'metadata update' });
    return { status: 'refunded', failedStep: 'metadata update', reason, refundTransactionId: refund.refundTransactionId };
  }

  const upgradedAt = Date.now();
  const audit = await durable.publishAudit({
    idempotencyKey: `${keyBase}/audit`,
    event: {
      v: 1,
      type: 'passport.upgraded',
      did: terms.did,
      tokenId: terms.tokenId,
      serial: terms.serial,
      tier: terms.newTier,
      oldTier: terms.oldTier,
      newTier: terms.newTier,
      timestamp: upgradedAt,
    },
  });
  await durable.recordUpgrade({ paymentTransactionId: payment.transactionId, tokenId: terms.tokenId, serial: terms.serial, newTier: terms.newTier, capabilities: terms.capabilities });
  return {
    status: 'upgraded',
    tokenId: terms.tokenId,
    serialNumber: terms.serial,
    did: terms.did,
    oldTier: terms.oldTier,
    newTier: terms.newTier,
    capabilities: terms.capabilities,
    upgradedAt,
    updateTransactionId: updated.transactionId,
    auditTransactionId: audit.transactionId,
  };
}
