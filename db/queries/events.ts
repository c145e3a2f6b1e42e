/**
 * The event log (db/migrations/0070_events.ts; domain/events.ts). appendEvents is called by every
 * projection write that records a change an agent acts on, inside ITS transaction and as its LAST
 * statement: it takes the events lock, makes ids above the greatest written, inserts (a key already
 * written adds nothing) and announces the new events on NOTIFY events_appended. Holding the lock
 * from the id's making to the commit is what puts ids in commit order (see the migration); being last
 * keeps the lock short and means a writer holding it waits on nothing else (no deadlock).
 */
import { randomBytes } from 'node:crypto';
import type { Sql, TransactionSql } from 'postgres';
import { nextEventIds, type EventBody, type EventType, type NewEvent } from '../../domain/events.js';
import { CHANNELS, notifyChange } from '../notify.js';

/** Advisory lock key of event writers (arbitrary, constant: "agent-passport events"). */
const EVENTS_LOCK = 7_240_128;
/** Longest NOTIFY payload sent with DIDs (longer: { all: true }, every waiter looks). */
const PAYLOAD_MAX = 480;

export interface EventRow {
  id: string;
  type: EventType;
  subject: string;
  audience: string[];
  capabilities: string[];
  occurred_at: Date;
  data: Record<string, unknown>;
}

/** What NOTIFY events_appended says: the newest id and whom the events concern. */
export interface EventsNotice {
  i: string;
  a?: string[];
  c?: string[];
  all?: true;
}

export function parseEventsNotice(payload: string): EventsNotice | null {
  try {
    const n = JSON.parse(payload) as EventsNotice;
    return typeof n?.i === 'string' ? n : null;
  } catch {
    return null;
  }
}

/** Writes events in the caller's transaction (its last statement); returns the ids written. */
export async function appendEvents(tx: TransactionSql, events: readonly NewEvent[]): Promise<string[]> {
  if (events.length === 0) return [];
  await tx`select pg_advisory_xact_lock(${EVENTS_LOCK})`;
  const [last] = await tx<{ id: string }[]>`select id from events order by id desc limit 1`;
  const ids = nextEventIds(last?.id ?? null, events.length, Date.now(), () => randomBytes(10));
  const written: string[] = [];
  const audience = new Set<string>();
  const caps = new Set<string>();
  for (const [n, e] of events.entries()) {
    const rows = await tx`
      insert into events (id, type, subject, audience, capabilities, data, dedupe_key)
      values (${ids[n]!}, ${e.type}, ${e.subject}, ${e.audience}, ${e.capabilities ?? []}, ${tx.json(e.data as never)}, ${e.key})
      on conflict (dedupe_key) do nothing
      returning id`;
    if (rows.length === 0) continue;
    written.push(ids[n]!);
    for (const d of e.audience) audience.add(d);
    for (const c of e.capabilities ?? []) caps.add(c);
  }
  if (written.length > 0) {
    const notice: EventsNotice = { i: written.at(-1)!, a: [...audience], ...(caps.size ? { c: [...caps] } : {}) };
    let payload = JSON.stringify(notice);
    if (payload.length > PAYLOAD_MAX) payload = JSON.stringify({ i: notice.i, all: true });
    await notifyChange(tx, CHANNELS.events, payload);
  }
  return written;
}

export function eventBody(row: EventRow): EventBody {
  return { id: row.id, type: row.type, timestamp: row.occurred_at.toISOString(), subject: row.subject, data: row.data };
}

/** The DID's events after `after` (exclusive; null: from the oldest kept), oldest first. */
export async function listEventsFor(sql: Sql, did: string, after: string | null, limit: number, types?: readonly string[]): Promise<EventRow[]> {
  return sql<EventRow[]>`
    select id, type, subject, audience, capabilities, occurred_at, data from events
     where audience @> ${[did]}::text[]
       ${after ? sql`and id > ${after}` : sql``}
       ${types && types.length ? sql`and type = any(${types as string[]}::text[])` : sql``}
     order by id limit ${limit}`;
}

/** The greatest event id written so far (a new subscription starts after it), or null. */
export async function latestEventId(sql: Sql | TransactionSql): Promise<string | null> {
  const [row] = await sql<{ id: string }[]>`select id from events order by id desc limit 1`;
  return row?.id ?? null;
}

export interface SubscriptionFilter {
  ownerDid: string;
  events: readonly string[];
  capabilities: readonly string[];
}

/** The events a subscription receives after `after`, oldest first (domain/events.ts eventReaches, in SQL). */
export async function listEventsForSubscription(sql: Sql, f: SubscriptionFilter, after: string | null, limit: number): Promise<EventRow[]> {
  const broadcast = f.capabilities.length > 0 ? sql`or (type in ('task.posted', 'task.released') and capabilities && ${f.capabilities as string[]}::text[])` : sql``;
  return sql<EventRow[]>`
    select id, type, subject, audience, capabilities, occurred_at, data from events
     where ${after ? sql`id > ${after} and` : sql``} type = any(${f.events as string[]}::text[])
       and (audience @> ${[f.ownerDid]}::text[] ${broadcast})
     order by id limit ${limit}`;
}
