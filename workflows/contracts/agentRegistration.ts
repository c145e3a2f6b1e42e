/** Contract of agentRegistration (workflows/agentRegistration.ts): started by POST /agents/register (api/routes/agents/). */
import type { AgentRegisteredMessage } from '../../domain/directory.js';
import type { Capability } from '../../domain/capabilities.js';
import type { Tier } from '../../domain/tiers.js';
import type { PassportWorkflowTimings } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** agent:{did} */
export function agentRegistrationWorkflowId(did: string): string {
  return `agent:${did}`;
}

export interface AgentRegistrationInput extends Bound {
  network: string;
  did: string;
  accountId: string;
  tokenId: string;
  serial: number;
  tier: Tier;
  name: string;
  capabilities: Capability[];
  endpoint: string;
  skills?: string[];
  description?: string;
  agentCard?: string;
  timings?: PassportWorkflowTimings;
}

export interface AgentRegistrationResult {
  status: 'registered';
  message: AgentRegisteredMessage;
  directorySequenceNumber: number;
  directoryTransactionId: string;
  auditTransactionId: string;
}

export const agentRegistrationContract = workflowContract<AgentRegistrationInput, AgentRegistrationResult>()({
  type: 'agentRegistration',
  workflowId: agentRegistrationWorkflowId,
});
