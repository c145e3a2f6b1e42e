/**
 * Activities of the sponsoredRegistration workflow: the registry.sponsored message on the
 * directory topic, paid by the operator through the idempotent submitter (a retried activity never
 * submits twice), and the outcome written back to the registry key row (the migration's trigger
 * announces it, so GET /api/v1/agents/me shows it on every instance). Public fields only.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Sql } from 'postgres';
import type { RegistrySponsoredMessage } from '../../domain/registry.js';
import { buildTopicMessage } from '../../ledger/operations.js';
import { findSponsoredRecord, markSponsoredFailed, recordSponsoredWrite } from '../../db/queries/registryKeys.js';
import { sponsoredRegistrationWorkflowId } from '../../workflows/contracts/sponsoredRegistration.js';
import type { LedgerServices } from '../../ledger/services.js';
import type { TopicWrite } from './directory.js';
import { ledgerCall } from './ledgerCall.js';

export function createRegistryActivities(deps: { sql: Sql; ledger: LedgerServices }) {
  const { sql } = deps;
  const { deployment, submitter } = deps.ledger;

  /**
   * Before the operator pays (issue 26 item 2): the message is the one of a sponsored registration
   * the API recorded, still waiting for its record, and the calling workflow is that registration's
   * (its id ends with registry-sponsored:{id}; tests put a scope in front). A copied input started
   * under another id, or again after the record was written, pays for nothing.
   */
  async function requireOwnSponsoredRecord(message: RegistrySponsoredMessage): Promise<void> {
    const workflowId = Context.current().info.workflowExecution?.workflowId ?? '';
    const row = await findSponsoredRecord(sql, message.id);
    const problem = !row
      ? 'no sponsored registration has this id'
      : !workflowId.endsWith(sponsoredRegistrationWorkflowId(message.id))
        ? `workflow ${workflowId} is not this registration's`
        : row.name !== message.name || row.owner !== message.owner
          ? 'the message does not match the registration'
          : row.directory_status !== 'pending'
            ? `its directory record is ${row.directory_status}`
            : null;
    if (problem) throw ApplicationFailure.create({ type: 'NotOwnClaim', message: `sponsored record ${message.id} refused: ${problem}`, nonRetryable: true });
  }

  /** Submits the registry.sponsored message to the directory topic (the operator pays). */
  async function publishSponsoredRecord(input: { idempotencyKey: string; message: RegistrySponsoredMessage }): Promise<TopicWrite> {
    await requireOwnSponsoredRecord(input.message);
    const r = await ledgerCall('registry.sponsored directory message', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'topic_message',
        build: () => buildTopicMessage({ topicId: deployment.topics.directory, message: JSON.stringify(input.message) }),
      }),
    );
    return { transactionId: r.transactionId, sequenceNumber: r.receipt.topicSequenceNumber ? Number(r.receipt.topicSequenceNumber) : null };
  }

  /** Writes the topic message's place into the registry key row. */
  async function recordSponsoredRecord(input: { id: string; sequenceNumber: number | null; transactionId: string }): Promise<void> {
    await recordSponsoredWrite(sql, input.id, input);
  }

  /** The directory record could not be written for good. */
  async function failSponsoredRecord(input: { id: string }): Promise<void> {
    await markSponsoredFailed(sql, input.id);
  }

  return { publishSponsoredRecord, recordSponsoredRecord, failSponsoredRecord };
}

export type RegistryActivities = ReturnType<typeof createRegistryActivities>;
