/**
 * The catch-up reader of the audit topic's projection (db/migrations/0005_audit_events.ts): reads
 * the topic through the mirror after the stored cursor and upserts what it finds, so the topic
 * stays the record. The publishing activity already wrote each event it published (without its
 * consensus timestamp); this fills those in, adds messages published by anything else, and
 * rebuilds the projection from the topic when the table (and its cursor) were emptied.
 * One reader at a time per topic (a transaction-scoped advisory try-lock); others skip.
 */
import type { Sql } from 'postgres';
import type { MirrorClient } from '../ledger/mirror.js';
import { parseAuditMessage } from '../domain/auditEvents.js';
import { auditCursor, recordAuditEvents, setAuditCursor, type ProjectedAuditEvent } from '../db/queries/auditEvents.js';

/** Projects the topic's messages after the cursor; returns how many events were projected (0 when another reader holds the lock). */
export async function catchUpAuditTopic(sql: Sql, mirror: MirrorClient, topicId: string): Promise<number> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ locked: boolean }[]>`select pg_try_advisory_xact_lock(hashtext(${`audit-projection:${topicId}`})) as locked`;
    if (!row?.locked) return 0;
    const after = await auditCursor(tx, topicId);
    const { messages, nextAfterSequence } = await mirror.getJoinedTopicMessages(topicId, { afterSequence: after });
    const events: ProjectedAuditEvent[] = [];
    for (const msg of messages) {
      const event = parseAuditMessage(msg.text(), { sequenceNumber: msg.sequenceNumber, consensusTimestamp: msg.consensusTimestamp });
      if (event) events.push({ sequenceNumber: msg.sequenceNumber, consensusTimestamp: msg.consensusTimestamp, event });
    }
    await recordAuditEvents(tx, topicId, events);
    if (nextAfterSequence > after) await setAuditCursor(tx, topicId, nextAfterSequence);
    return events.length;
  }) as Promise<number>;
}
