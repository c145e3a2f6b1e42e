/**
 * Projection activity of the a2aMessage workflow: reads the submitted message back from the mirror
 * (its chunks joined by chunk_info), checks the envelope and the payer, and records it in
 * a2a_messages, the table GET /a2a/inbox and /a2a/conversation read. Retried until the mirror has
 * every chunk; recording is idempotent (one row per message id).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { decodeEnvelope, isTrustedPayer } from '@agent-passport/core/a2a';
import { parseHederaDid } from '@agent-passport/core/did';
import { recordA2aMessage } from '../../db/queries/a2aMessages.js';
import { joinTopicMessages, toMirrorTransactionId, type MirrorTopicMessage } from '../../ledger/mirror.js';
import type { LedgerServices } from '../../ledger/services.js';
import type { ProjectedA2aMessage } from '../../workflows/contracts/a2aMessage.js';

export interface ProjectA2aInput {
  messageId: string;
  /** transaction id of the first chunk (SDK form) */
  transactionId: string;
  firstSequence: number;
  lastSequence: number;
  chunks: number;
}

/** Whether a raw topic message is a chunk of the message whose first transaction is `mirrorTxId`. */
function belongsTo(m: MirrorTopicMessage, mirrorTxId: string, firstSequence: number): boolean {
  const t = m.chunk_info?.initial_transaction_id;
  if (!t) return m.sequence_number === firstSequence;
  return toMirrorTransactionId(`${t.account_id}@${t.transaction_valid_start}`) === mirrorTxId;
}

export function createA2aDbActivities(deps: { sql: Sql; ledger: LedgerServices }) {
  const { deployment, mirror } = deps.ledger;
  const topicId = deployment.topics.a2a;

  async function projectA2aMessage(input: ProjectA2aInput): Promise<ProjectedA2aMessage> {
    const raw = await mirror.getTopicMessages(topicId, { afterSequence: input.firstSequence - 1, limit: input.lastSequence - input.firstSequence + 1 });
    const mirrorTxId = toMirrorTransactionId(input.transactionId);
    const mine = raw.filter((m) => belongsTo(m, mirrorTxId, input.firstSequence));
    if (mine.length < input.chunks) {
      throw ApplicationFailure.create({ message: `mirror shows ${mine.length} of ${input.chunks} chunk(s) of ${input.transactionId}`, type: 'MirrorBehind' });
    }
    const joined = joinTopicMessages(mine).messages[0];
    const envelope = joined ? decodeEnvelope(joined.message) : null;
    const sender = envelope ? parseHederaDid(envelope.from) : null;
    if (!joined || !envelope || !sender || !isTrustedPayer(joined.payerAccountId, sender.accountId, deployment.operator.accountId)) {
      throw ApplicationFailure.create({ message: `topic message ${input.transactionId} is not an A2A envelope paid by its sender`, type: 'A2aEnvelopeInvalid', nonRetryable: true });
    }
    const row = await recordA2aMessage(deps.sql, {
      id: input.messageId,
      network: deployment.network,
      topicId,
      sequenceNumber: joined.sequenceNumber,
      lastSequenceNumber: joined.lastSequenceNumber,
      consensusTimestamp: joined.consensusTimestamp,
      transactionId: input.transactionId,
      fromDid: envelope.from,
      toDid: envelope.to,
      contentType: envelope.contentType,
      body: envelope.body,
      payerAccountId: joined.payerAccountId,
      chunks: joined.chunks,
    });
    return { id: row.id, sequenceNumber: Number(row.sequence_number), consensusTimestamp: row.consensus_timestamp, transactionId: row.transaction_id, chunks: row.chunks };
  }

  return { projectA2aMessage };
}

export type A2aDbActivities = ReturnType<typeof createA2aDbActivities>;
