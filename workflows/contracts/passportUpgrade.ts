/**
 * Contract of passportUpgrade (workflows/passportUpgrade.ts): started by POST /passport/upgrade
 * (api/passports/upgrade.ts) once the x402 payment of the price difference is verified and
 * recorded with its claim of the passport; run again by the payment reconciler for a pending claim.
 */
import type { Capability } from '../../domain/capabilities.js';
import type { Tier } from '../../domain/tiers.js';
import type { PassportWorkflowTimings, PaymentRef } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** passport-upgrade:{tokenId}:{serial}:{tier} */
export function passportUpgradeWorkflowId(tokenId: string, serial: number, tier: string): string {
  return `passport-upgrade:${tokenId}:${serial}:${tier}`;
}

export interface PassportUpgradeInput extends Bound {
  tokenId: string;
  serial: number;
  accountId: string;
  did: string;
  oldTier: Tier;
  newTier: Tier;
  capabilities: Capability[];
  payment: PaymentRef;
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
  /** failedStep absent: the metadata update failed (histories before issue 23 say so by its absence) */
  | { status: 'refunded'; failedStep?: 'settle' | 'confirmSettlement' | 'metadata update'; reason: string; refundTransactionId: string }
  /** the payment never moved (settle failed for good), or confirmSettlement refused with nothing to refund: the claim is released ('failed') */
  | { status: 'released'; failedStep: 'settle' | 'confirmSettlement'; reason: string };

export const passportUpgradeContract = workflowContract<PassportUpgradeInput, PassportUpgradeResult>()({
  type: 'passportUpgrade',
  workflowId: passportUpgradeWorkflowId,
});
