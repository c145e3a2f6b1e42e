/**
 * Queries of the contact messages (db/migrations/0013_contact.ts). The per-address cap is counted in
 * the insert's own transaction under a transaction-scoped advisory lock on the address digest, so
 * concurrent messages from one address can never exceed it.
 */
import type { Sql } from 'postgres';

export interface ContactMessageRow {
  id: string;
  name: string;
  email: string;
  message: string;
  created_at: Date;
}

export interface NewContactMessage {
  id: string;
  name: string;
  email: string;
  message: string;
  ipSha256: Buffer;
  at: Date;
}

/**
 * Stores the message unless the address already sent `cap` messages in the `windowMs` before `at`.
 * Returns null when stored, else the time the oldest counted message leaves the window.
 */
export async function insertContactMessage(sql: Sql, m: NewContactMessage, cap: number, windowMs: number): Promise<Date | null> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtextextended('contact:' || encode(${m.ipSha256}::bytea, 'hex'), 0))`;
    const since = new Date(m.at.getTime() - windowMs);
    const recent = await tx<{ created_at: Date }[]>`
      select created_at from contact_messages where ip_sha256 = ${m.ipSha256} and created_at > ${since}
      order by created_at asc`;
    if (recent.length >= cap) return new Date(recent[recent.length - cap]!.created_at.getTime() + windowMs);
    await tx`insert into contact_messages (id, name, email, message, ip_sha256, created_at)
             values (${m.id}, ${m.name}, ${m.email}, ${m.message}, ${m.ipSha256}, ${m.at})`;
    return null;
  });
}

/** A page of the messages, newest first, and how many there are. */
export async function listContactMessages(sql: Sql, limit: number, offset: number): Promise<{ messages: ContactMessageRow[]; total: number }> {
  const messages = await sql<ContactMessageRow[]>`
    select id, name, email, message, created_at from contact_messages
    order by created_at desc, id desc limit ${limit} offset ${offset}`;
  const [{ total }] = await sql<{ total: number }[]>`select count(*)::int as total from contact_messages`;
  return { messages, total };
}
