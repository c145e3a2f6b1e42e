/** Contract of sponsoredRegistration (workflows/sponsoredRegistration.ts): started by POST /api/v1/agents/register with an owner (api/routes/registry/). */
import type { PassportWorkflowTimings } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** registry-sponsored:{registration id} */
export function sponsoredRegistrationWorkflowId(id: string): string {
  return `registry-sponsored:${id}`;
}

export interface SponsoredRegistrationInput extends Bound {
  id: string;
  name: string;
  owner: string;
  /** registration time, Unix milliseconds */
  createdAt: number;
  timings?: PassportWorkflowTimings;
}

export interface SponsoredRegistrationResult {
  status: 'written';
  sequenceNumber: number | null;
  transactionId: string;
}

export const sponsoredRegistrationContract = workflowContract<SponsoredRegistrationInput, SponsoredRegistrationResult>()({
  type: 'sponsoredRegistration',
  workflowId: sponsoredRegistrationWorkflowId,
});
