/**
 * Activities of the sponsoredRegistration workflow: the registry.sponsored message on the
 * directory topic, paid by the operator through the idempotent submitter (a retried activity never
 * submits twice), and the outcome written back to the registry key row (the migration's trigger
 * announces it, so GET /api/v1/agents/me shows it on every instance). Public fields only.
 */
import type { Sql } from 'postgres';
import type { RegistrySponsoredMessage } from '../../domain/registry.js';
import { buildTopicMessage } from '../../ledger/operations.js';
import { markSponsoredFailed, recordSponsoredWrite } from '../../db/queries/registryKeys.js';
import type { LedgerServices } from '../../ledger/services.js';
import type { TopicWrite } from './directory.js';
import { ledgerCall } from './ledgerCall.js';

export function createRegistryActivities(deps: { sql: Sql; ledger: LedgerServices }) {
  const { sql } = deps;
  const { deployment, submitter } = deps.ledger;

  /** Submits the registry.sponsored message to the directory topic (the operator pays). */
  async function publishSponsoredRecord(input: { idempotencyKey: string; message: RegistrySponsoredMessage }): Promise<TopicWrite> {
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
