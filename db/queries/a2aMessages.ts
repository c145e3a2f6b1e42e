/** The a2a_messages projection (db/migrations/0008_a2a.ts). */
import type { Sql } from 'postgres';
import { appendEvents } from './events.js';

export interface A2aMessageRow {
  id: string;
  network: string;
  topic_id: string;
  sequence_number: string;
  last_sequence_number: string;
  consensus_timestamp: string;
  transaction_id: string;
  from_did: string;
  to_did: string;
  content_type: string;
  body: string;
  payer_account_id: string;
  chunks: number;
  created_at: Date;
}

export interface NewA2aMessage {
  id: string;
  network: string;
  topicId: string;
  sequenceNumber: number;
  lastSequenceNumber: number;
  consensusTimestamp: string;
  transactionId: string;
  fromDid: string;
  toDid: string;
  contentType: string;
  body: string;
  payerAccountId: string;
  chunks: number;
}

/** Inserts a message once (a retried activity finds the row already there and returns it). */
export async function recordA2aMessage(sql: Sql, m: NewA2aMessage): Promise<A2aMessageRow> {
  return sql.begin(async (tx) => {
    const row = await insertMessage(tx as unknown as Sql, m);
    // the recipient's event (ids only: the body is read from the inbox), last in the transaction
    await appendEvents(tx, [
      {
        type: 'a2a.message_received',
        subject: m.id,
        audience: [m.toDid],
        data: { messageId: m.id, fromDid: m.fromDid, toDid: m.toDid, contentType: m.contentType, topicId: m.topicId, sequenceNumber: m.sequenceNumber, transactionId: m.transactionId },
        key: `a2a:${m.id}`,
      },
    ]);
    return row;
  }) as Promise<A2aMessageRow>;
}

async function insertMessage(sql: Sql, m: NewA2aMessage): Promise<A2aMessageRow> {
  const [row] = await sql<A2aMessageRow[]>`
    insert into a2a_messages (id, network, topic_id, sequence_number, last_sequence_number, consensus_timestamp, transaction_id,
                              from_did, to_did, content_type, body, payer_account_id, chunks)
    values (${m.id}, ${m.network}, ${m.topicId}, ${m.sequenceNumber}, ${m.lastSequenceNumber}, ${m.consensusTimestamp}, ${m.transactionId},
            ${m.fromDid}, ${m.toDid}, ${m.contentType}, ${m.body}, ${m.payerAccountId}, ${m.chunks})
    on conflict (id) do update set id = excluded.id
    returning *`;
  return row;
}

export interface Page {
  limit: number;
  offset: number;
}

/** Messages addressed to `did`, newest first. */
export async function listInbox(sql: Sql, did: string, page: Page): Promise<{ rows: A2aMessageRow[]; total: number }> {
  const rows = await sql<A2aMessageRow[]>`
    select * from a2a_messages where to_did = ${did}
     order by last_sequence_number desc limit ${page.limit} offset ${page.offset}`;
  const [{ count }] = await sql<{ count: bigint }[]>`select count(*)::bigint as count from a2a_messages where to_did = ${did}`;
  return { rows, total: Number(count) };
}

/** Messages between `a` and `b` in both directions, oldest first. */
export async function listConversation(sql: Sql, a: string, b: string, page: Page): Promise<{ rows: A2aMessageRow[]; total: number }> {
  const rows = await sql<A2aMessageRow[]>`
    select * from a2a_messages
     where (from_did = ${a} and to_did = ${b}) or (from_did = ${b} and to_did = ${a})
     order by last_sequence_number asc limit ${page.limit} offset ${page.offset}`;
  const [{ count }] = await sql<{ count: bigint }[]>`
    select count(*)::bigint as count from a2a_messages
     where (from_did = ${a} and to_did = ${b}) or (from_did = ${b} and to_did = ${a})`;
  return { rows, total: Number(count) };
}
