/**
 * passportUpgrade (id passport-upgrade:{tokenId}:{serial}:{tier}). The API settled the price
 * difference over x402 and claimed the passport before starting it.
 *
 *   confirmSettlement -> updatePassportMetadata (in place) -> publishAudit (passport.upgraded)
 *   -> recordUpgrade (projection)
 *
 * Saga: when the metadata update fails for good the difference is refunded. When confirmSettlement
 * refuses, the difference is refunded too, or the claim released when no settled payment exists.
 */
import { workflowInfo } from '@temporalio/workflow';
import type { Capability } from '../domain/capabilities.js';
import type { Tier } from '../domain/tiers.js';
import { confirmSettlementOrUndo, failureReason, isActivityFailure, passportActivities } from './passportCommon.js';
import type { PassportWorkflowTimings, SettledPaymentRef } from './passportIds.js';

export interface PassportUpgradeInput {
  tokenId: string;
  serial: number;
  accountId: string;
  did: string;
  oldTier: Tier;
  newTier: Tier;
  capabilities: Capability[];
  payment: SettledPaymentRef;
  timings?: PassportWorkflowTimings;
}

export type PassportUpgradeResult =
  | {
      status: 'upgraded';
      tokenId: string;
      serialNumber: number;
      did: string;
      oldTier: Tier;
      newTier: Tier;
      capabilities: Capability[];
      upgradedAt: number;
      updateTransactionId: string;
      auditTransactionId: string;
    }
  | { status: 'refunded'; failedStep?: 'confirmSettlement'; reason: string; refundTransactionId: string }
  /** confirmSettlement refused and no settled payment was found to refund: the claim is released ('failed') */
  | { status: 'released'; failedStep: 'confirmSettlement'; reason: string };

export async function passportUpgrade(input: PassportUpgradeInput): Promise<PassportUpgradeResult> {
  const { steps, durable } = passportActivities(input.timings);
  const payment = input.payment;
  const unconfirmed = await confirmSettlementOrUndo(durable, payment);
  if (unconfirmed) return unconfirmed;

  const keyBase = `${workflowInfo().workflowId}/${payment.transactionId}`;
  let updated: { transactionId: string };
  try {
    // the passport's own collection: after a migration (bootstrap:network --new-collection) older passports live in the previous one
    updated = await steps.updatePassportMetadata({ idempotencyKey: `${keyBase}/metadata`, tokenId: input.tokenId, serial: input.serial, tier: input.newTier, capabilities: input.capabilities });
  } catch (err) {
    if (!isActivityFailure(err)) throw err;
    const reason = `metadata update failed: ${failureReason(err)}`;
    const refund = await durable.refundPayment({ paymentTransactionId: payment.transactionId, reason });
    return { status: 'refunded', reason, refundTransactionId: refund.refundTransactionId };
  }

  const upgradedAt = Date.now();
  const audit = await durable.publishAudit({
    idempotencyKey: `${keyBase}/audit`,
    event: {
      v: 1,
      type: 'passport.upgraded',
      did: input.did,
      tokenId: input.tokenId,
      serial: input.serial,
      tier: input.newTier,
      oldTier: input.oldTier,
      newTier: input.newTier,
      timestamp: upgradedAt,
    },
  });
  await durable.recordUpgrade({ paymentTransactionId: payment.transactionId, tokenId: input.tokenId, serial: input.serial, newTier: input.newTier, capabilities: input.capabilities });
  return {
    status: 'upgraded',
    tokenId: input.tokenId,
    serialNumber: input.serial,
    did: input.did,
    oldTier: input.oldTier,
    newTier: input.newTier,
    capabilities: input.capabilities,
    upgradedAt,
    updateTransactionId: updated.transactionId,
    auditTransactionId: audit.transactionId,
  };
}
