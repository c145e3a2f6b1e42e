/**
 * Contract of domainOwnership (workflows/domainOwnership.ts): the challenges handed out before issue
 * 20 still run it (no route starts new ones); Update checkNow asks for a check at once.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { DomainOwnership } from '../../db/queries/domainOwnership.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** domain-challenge:{domain}:{token} */
export function domainOwnershipWorkflowId(domain: string, token: string): string {
  return `domain-challenge:${domain}:${token}`;
}

export interface DomainOwnershipInput extends Bound {
  domain: string;
  token: string;
  /** epoch ms at which the challenge expires (24 h after it was handed out) */
  expiresAtMs: number;
  /** time between two checks (default 5 minutes; tests pass a short one) */
  pollIntervalMs?: number;
  /** retry knobs of the check activity */
  retryInitialMs?: number;
  retryMaximumMs?: number;
}

/** What one check found (activity checkDomainOwnership). */
export interface OwnershipCheckResult {
  /** the challenge's state after this check */
  status: 'pending' | 'verified' | 'expired';
  /** the snapshot's domain_ownership object as it now stands */
  ownership: DomainOwnership;
  /** what each place showed (for the Web UI and the 403's hint) */
  detail: string;
}

export const checkNowUpdate = defineUpdate<OwnershipCheckResult, []>('checkNow');
export const ownershipStateQuery = defineQuery<OwnershipCheckResult | null>('ownershipState');

export const domainOwnershipContract = workflowContract<DomainOwnershipInput, OwnershipCheckResult>()({
  type: 'domainOwnership',
  workflowId: domainOwnershipWorkflowId,
  updates: { checkNow: checkNowUpdate },
  queries: { ownershipState: ownershipStateQuery },
});
