/** Database activities of the agentRegistration workflow: the directory projection (thin over db/queries/agents.ts). */
import type { Sql } from 'postgres';
import { recordRegisteredAgent, releaseAgentClaim, type RegisteredAgent } from '../../db/queries/agents.js';

export function createAgentDbActivities(deps: { sql: Sql }) {
  const { sql } = deps;

  /** Writes the registered row and announces it (NOTIFY agent_changed) in one transaction. */
  async function recordAgent(input: RegisteredAgent): Promise<void> {
    await recordRegisteredAgent(sql, input);
  }

  /** Frees the DID and name a failed registration had claimed. */
  async function releaseAgent(input: { did: string }): Promise<{ released: boolean }> {
    return { released: await releaseAgentClaim(sql, input.did) };
  }

  return { recordAgent, releaseAgent };
}

export type AgentDbActivities = ReturnType<typeof createAgentDbActivities>;
