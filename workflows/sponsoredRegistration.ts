/**
 * sponsoredRegistration (id registry-sponsored:{registration id}), started by POST
 * /api/v1/agents/register with an owner once the registration took its place in the day's
 * sponsored budget (DESIGN.md section 10: "Sponsored registration writes a directory record paid by
 * the service, through a workflow"):
 *
 *   publishSponsoredRecord (registry.sponsored, directory topic, paid by the operator)
 *   -> recordSponsoredRecord (sequence number and transaction id into the registry key row)
 *
 * When the message cannot be written (final ledger error or attempts used up) the row's directory
 * record is marked failed and the workflow fails; the key itself stays valid. The input holds
 * public fields only (never the key nor its hash).
 */
import { patched, proxyActivities, setCurrentDetails, workflowInfo } from '@temporalio/workflow';
import { sponsoredMessage } from '../domain/registry.js';
import type { RegistryActivities } from '../activities/ledger/registry.js';
import type { TopicWrite } from '../activities/ledger/directory.js';
import type { SponsoredRegistrationInput, SponsoredRegistrationResult } from './contracts/sponsoredRegistration.js';
import { HEARTBEAT_TIMEOUT_MS, LEDGER_ACTIVITY_TIMEOUT_MS, LEDGER_MAX_ATTEMPTS, RETRY_MAXIMUM_MS } from './activityOptions.js';
import { BOUND_MESSAGES_PATCH, requireBoundStart } from './binding.js';

export async function sponsoredRegistration(input: SponsoredRegistrationInput): Promise<SponsoredRegistrationResult> {
  requireBoundStart(input, 'sponsoredRegistration'); // an input written for another workflow starts nothing (issue 26)
  const t = input.timings ?? {};
  const retry = { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2 };
  const startToCloseTimeout = t.activityTimeoutMs ?? LEDGER_ACTIVITY_TIMEOUT_MS;
  const heartbeatTimeout = HEARTBEAT_TIMEOUT_MS;
  // the ledger write has a compensation behind it: bounded attempts; the row updates are retried until they succeed
  const steps = proxyActivities<RegistryActivities>({ startToCloseTimeout, heartbeatTimeout, retry: { ...retry, maximumAttempts: t.ledgerMaxAttempts ?? LEDGER_MAX_ATTEMPTS } });
  const durable = proxyActivities<RegistryActivities>({ startToCloseTimeout, heartbeatTimeout, retry });
  const info = workflowInfo();
  const message = sponsoredMessage(input);
  setCurrentDetails(`Sponsored registration "${input.name}" (${input.id}) for ${input.owner}: directory message`);
  let write: TopicWrite;
  try {
    // keyed by the workflow since issue 26: a later run of the same registration finds the earlier write
    const key = patched(BOUND_MESSAGES_PATCH) ? `${info.workflowId}/directory` : `${info.workflowId}/${info.runId}/directory`;
    write = await steps.publishSponsoredRecord({ idempotencyKey: key, message });
  } catch (err) {
    setCurrentDetails(`Sponsored registration "${input.name}" (${input.id}): directory message not written`);
    await durable.failSponsoredRecord({ id: input.id });
    throw err;
  }
  await durable.recordSponsoredRecord({ id: input.id, sequenceNumber: write.sequenceNumber, transactionId: write.transactionId });
  setCurrentDetails(`Sponsored registration "${input.name}" (${input.id}): directory #${write.sequenceNumber ?? '?'}, ${write.transactionId}`);
  return { status: 'written', sequenceNumber: write.sequenceNumber, transactionId: write.transactionId };
}
