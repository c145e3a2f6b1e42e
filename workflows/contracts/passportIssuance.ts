/**
 * Contract of passportIssuance (workflows/passportIssuance.ts): started by POST /passport/request
 * (api/passports/issuance.ts) once the x402 payment is verified and recorded with its claim, and
 * run again by the payment reconciler for a claim still pending.
 *
 * Its id names the wallet, not the payment (DESIGN 5): one issuance per wallet at a time, enforced by
 * Temporal as well as by the pending claim. The payment is bound to the workflow id by its claim row
 * (passport_issuances.workflow_id), written with the payment before any money moves, so a retry of
 * the same payment finds the claim and attaches to the same workflow (docs/decisions.md, "x402
 * settlement in the workflow").
 */
import type { Capability } from '../../domain/capabilities.js';
import type { Tier } from '../../domain/tiers.js';
import type { PassportWorkflowTimings, PaymentRef } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** passport:{network}:{accountId} */
export function passportIssuanceWorkflowId(network: string, accountId: string): string {
  return `passport:${network}:${accountId}`;
}

export interface PassportIssuanceInput extends Bound {
  network: string;
  accountId: string;
  did: string;
  tier: Tier;
  capabilities: Capability[];
  endpoint?: string;
  payment: PaymentRef;
  timings?: PassportWorkflowTimings;
}

export type PassportIssuanceResult =
  | {
      status: 'issued';
      tokenId: string;
      serialNumber: number;
      did: string;
      accountId: string;
      tier: Tier;
      capabilities: Capability[];
      issuedAt: number;
      mintTransactionId: string;
      deliverTransactionId: string;
      auditTransactionId: string;
    }
  | { status: 'refunded'; failedStep: 'settle' | 'confirmSettlement' | 'mint' | 'deliver'; reason: string; refundTransactionId: string }
  /** the payment never moved (settle failed for good), or confirmSettlement refused with nothing to refund: the claim is released ('failed') */
  | { status: 'released'; failedStep: 'settle' | 'confirmSettlement'; reason: string };

export const passportIssuanceContract = workflowContract<PassportIssuanceInput, PassportIssuanceResult>()({
  type: 'passportIssuance',
  workflowId: passportIssuanceWorkflowId,
});
