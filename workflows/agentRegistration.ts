/**
 * agentRegistration (id agent:{did}), started by POST /agents/register after the API checked the
 * passport on the ledger, the capabilities, the agent card and claimed the DID and name:
 *
 *   publishDirectoryMessage (agent.registered, directory topic) -> publishAgentAudit (audit topic)
 *   -> recordAgent (projection row + NOTIFY agent_changed, so every API process serves it)
 *
 * When the directory message cannot be written (final ledger error or attempts used up) the claim
 * is released and the workflow fails (the API answers 502); once it is on the topic the rest is
 * retried until it succeeds (the topic is the record). The input holds public fields only.
 */
import { proxyActivities, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import type { DirectoryLedgerActivities } from '../activities/ledger/directory.js';
import type { AgentDbActivities } from '../activities/db/agents.js';
import type { AgentRegisteredMessage } from '../domain/directory.js';
import type { PassportWorkflowTimings } from './contracts/passport.js';
import type { AgentRegistrationInput, AgentRegistrationResult } from './contracts/agentRegistration.js';
import { HEARTBEAT_TIMEOUT_MS, LEDGER_ACTIVITY_TIMEOUT_MS, LEDGER_MAX_ATTEMPTS, RETRY_MAXIMUM_MS } from './activityOptions.js';
import { requireBoundStart } from './binding.js';

export function directoryActivities(timings: PassportWorkflowTimings = {}) {
  const retry = {
    initialInterval: timings.retryInitialMs ?? 1_000,
    maximumInterval: timings.retryMaximumMs ?? RETRY_MAXIMUM_MS,
    backoffCoefficient: 2,
  };
  const startToCloseTimeout = timings.activityTimeoutMs ?? LEDGER_ACTIVITY_TIMEOUT_MS;
  const heartbeatTimeout = HEARTBEAT_TIMEOUT_MS;
  return {
    /** a write with a compensation behind it: bounded attempts */
    steps: proxyActivities<DirectoryLedgerActivities>({ startToCloseTimeout, heartbeatTimeout, retry: { ...retry, maximumAttempts: timings.ledgerMaxAttempts ?? LEDGER_MAX_ATTEMPTS } }),
    /** writes that must eventually happen: retried until they do */
    durable: proxyActivities<DirectoryLedgerActivities & AgentDbActivities>({ startToCloseTimeout, heartbeatTimeout, retry }),
  };
}

export async function agentRegistration(input: AgentRegistrationInput): Promise<AgentRegistrationResult> {
  requireBoundStart(input, 'agentRegistration'); // an input written for another workflow starts nothing (issue 26)
  const { steps, durable } = directoryActivities(input.timings);
  const info = workflowInfo();
  const keyBase = `${info.workflowId}/${info.runId}`;
  const message: AgentRegisteredMessage = {
    v: 1,
    type: 'agent.registered',
    did: input.did,
    accountId: input.accountId,
    tokenId: input.tokenId,
    serial: input.serial,
    name: input.name,
    capabilities: input.capabilities,
    endpoint: input.endpoint,
    tier: input.tier,
    timestamp: Date.now(),
    ...(input.skills ? { skills: input.skills } : {}),
    ...(input.description ? { description: input.description } : {}),
    ...(input.agentCard ? { agentCard: input.agentCard } : {}),
  };
  setCurrentDetails(`Registering agent "${input.name}" (${input.did}), ${input.tier} passport ${input.tokenId}/${input.serial}: directory message`);
  let directory;
  try {
    directory = await steps.publishDirectoryMessage({ idempotencyKey: `${keyBase}/directory`, message });
  } catch (err) {
    setCurrentDetails(`Registration of "${input.name}" (${input.did}) failed: directory message not written; claim released`);
    await durable.releaseAgent({ did: input.did });
    throw err;
  }
  setCurrentDetails(`Registering agent "${input.name}" (${input.did}): directory #${directory.sequenceNumber}, audit message`);
  const audit = await durable.publishAgentAudit({
    idempotencyKey: `${keyBase}/audit`,
    event: { v: 1, type: 'agent.registered', did: input.did, tokenId: input.tokenId, serial: input.serial, tier: input.tier, timestamp: message.timestamp },
  });
  const directorySequenceNumber = directory.sequenceNumber ?? 0;
  await durable.recordAgent({
    message,
    network: input.network,
    directorySequence: directorySequenceNumber,
    directoryTransactionId: directory.transactionId,
    auditTransactionId: audit.transactionId,
    workflowId: info.workflowId,
  });
  setCurrentDetails(`Registered agent "${input.name}" (${input.did}): directory #${directorySequenceNumber}, audit ${audit.transactionId}`);
  return { status: 'registered', message, directorySequenceNumber, directoryTransactionId: directory.transactionId, auditTransactionId: audit.transactionId };
}
