/** Contract of trustAttest (workflows/trustAttest.ts): started by POST /api/trust/{domain}/attest (api/routes/trust/attest.ts); returns the SPEC on_chain object. */
import type { OnChainAttestation } from '../../db/queries/trustAttestations.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';
export type { OnChainAttestation };

/** trust-attest:{domain}:{snapshotHash} */
export function trustAttestWorkflowId(domain: string, snapshotHash: string): string {
  return `trust-attest:${domain}:${snapshotHash}`;
}

export interface TrustAttestInput extends Bound {
  domain: string;
  snapshotHash: string;
  /** retry knobs (defaults suit production; tests pass small ones) */
  retryInitialMs?: number;
  retryMaximumMs?: number;
  maxAttempts?: number;
}

export const trustAttestContract = workflowContract<TrustAttestInput, OnChainAttestation>()({
  type: 'trustAttest',
  workflowId: trustAttestWorkflowId,
});
