/**
 * Queries of the audit topic's projection, audit_events and audit_cursors
 * (db/migrations/0005_audit_events.ts).
 */
import type { Sql, TransactionSql } from 'postgres';
import type { AuditEvent } from '../../domain/auditEvents.js';

type Q = Sql | TransactionSql;

export interface ProjectedAuditEvent {
  sequenceNumber: number;
  /** null when written before the mirror was read (the catch-up reader fills it in) */
  consensusTimestamp: string | null;
  event: AuditEvent;
}

/**
 * Upserts events of a topic. A row first written without its consensus timestamp gets it (and the
 * event as read back from the topic) when the catch-up reader sees the message.
 */
export async function recordAuditEvents(sql: Q, topicId: string, events: ProjectedAuditEvent[]): Promise<void> {
  if (events.length === 0) return;
  await sql`
    insert into audit_events (topic_id, sequence_number, consensus_timestamp, type, token_id, serial, event)
    select ${topicId}, x.seq, n.ts, x.type, n.token_id, n.serial, x.event
      from unnest(
        ${sql.array(events.map((e) => String(e.sequenceNumber)))}::bigint[],
        ${sql.array(events.map((e) => e.consensusTimestamp ?? ''))}::text[],
        ${sql.array(events.map((e) => e.event.type))}::text[],
        ${sql.array(events.map((e) => e.event.tokenId ?? ''))}::text[],
        ${sql.array(events.map((e) => (e.event.serial === undefined ? '' : String(e.event.serial))))}::text[],
        ${sql.array(events.map((e) => JSON.stringify(e.event)))}::jsonb[]
      ) as x(seq, ts_raw, type, token_raw, serial_raw, event)
      cross join lateral (select nullif(x.ts_raw, '') as ts, nullif(x.token_raw, '') as token_id, nullif(x.serial_raw, '')::bigint as serial) n
    on conflict (topic_id, sequence_number) do update
      set consensus_timestamp = coalesce(excluded.consensus_timestamp, audit_events.consensus_timestamp),
          event = case when excluded.consensus_timestamp is not null then excluded.event else audit_events.event end`;
}

/** One page of a passport's audit events in topic order, with the total count. */
export async function listAuditEvents(
  sql: Q,
  f: { topicId: string; tokenId: string; serial: number; limit: number; offset: number },
): Promise<{ events: AuditEvent[]; total: number }> {
  const [rows, count] = await Promise.all([
    sql<{ event: AuditEvent }[]>`
      select event from audit_events
       where token_id = ${f.tokenId} and serial = ${f.serial} and topic_id = ${f.topicId}
       order by sequence_number
       limit ${f.limit} offset ${f.offset}`,
    sql<{ total: string }[]>`
      select count(*) as total from audit_events where token_id = ${f.tokenId} and serial = ${f.serial} and topic_id = ${f.topicId}`,
  ]);
  return { events: rows.map((r) => r.event), total: Number(count[0]?.total ?? 0) };
}

/** The last topic sequence number the catch-up reader projected (0 before the first). */
export async function auditCursor(sql: Q, topicId: string): Promise<number> {
  const rows = await sql<{ after_sequence: string }[]>`select after_sequence from audit_cursors where topic_id = ${topicId}`;
  return rows[0] ? Number(rows[0].after_sequence) : 0;
}

export async function setAuditCursor(sql: Q, topicId: string, afterSequence: number): Promise<void> {
  await sql`
    insert into audit_cursors (topic_id, after_sequence, updated_at) values (${topicId}, ${afterSequence}, now())
    on conflict (topic_id) do update set after_sequence = greatest(audit_cursors.after_sequence, excluded.after_sequence), updated_at = now()`;
}
