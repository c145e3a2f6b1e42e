/**
 * The marketplace records per DID (db/migrations/0025_market_records.ts; domain/marketRecord.ts).
 * Written only through applyRecordDelta, inside the transaction of the task write that moved them
 * (db/queries/marketTasks.ts upsertTask), each change announced on NOTIFY market_record_changed (payload the
 * DID) so the API's memory (api/market/records.ts) reloads that row.
 */
import type { Sql, TransactionSql } from 'postgres';
import type { MarketRecord } from '../../domain/marketRecord.js';
import { CHANNELS, notifyChange, RELOAD_ALL } from '../notify.js';

export interface MarketRecordRow {
  did: string;
  posted: number;
  completed: number;
  cancelled_after_delivery: number;
  delivered: number;
  paid: number;
}

export function marketRecordOf(row: MarketRecordRow): MarketRecord {
  return { posted: row.posted, completed: row.completed, cancelledAfterDelivery: row.cancelled_after_delivery, delivered: row.delivered, paid: row.paid };
}

/** Adds each DID's change (counts may go down: a task's status moved on) and announces the DIDs. */
export async function applyRecordDelta(tx: Sql | TransactionSql, delta: Map<string, MarketRecord>): Promise<void> {
  // a fixed order, so two transactions touching the same DIDs never wait on each other crosswise
  for (const did of [...delta.keys()].sort()) {
    const d = delta.get(did)!;
    await tx`
      insert into market_records (did, posted, completed, cancelled_after_delivery, delivered, paid)
      values (${did}, ${Math.max(0, d.posted)}, ${Math.max(0, d.completed)}, ${Math.max(0, d.cancelledAfterDelivery)}, ${Math.max(0, d.delivered)}, ${Math.max(0, d.paid)})
      on conflict (did) do update set
        posted = greatest(0, market_records.posted + ${d.posted}),
        completed = greatest(0, market_records.completed + ${d.completed}),
        cancelled_after_delivery = greatest(0, market_records.cancelled_after_delivery + ${d.cancelledAfterDelivery}),
        delivered = greatest(0, market_records.delivered + ${d.delivered}),
        paid = greatest(0, market_records.paid + ${d.paid}),
        updated_at = now()`;
    await notifyChange(tx, CHANNELS.marketRecord, did);
  }
}

export async function listMarketRecords(sql: Sql): Promise<MarketRecordRow[]> {
  return sql<MarketRecordRow[]>`select did, posted, completed, cancelled_after_delivery, delivered, paid from market_records`;
}

export async function findMarketRecord(sql: Sql, did: string): Promise<MarketRecordRow | null> {
  const [row] = await sql<MarketRecordRow[]>`select did, posted, completed, cancelled_after_delivery, delivered, paid from market_records where did = ${did}`;
  return row ?? null;
}

/**
 * Bulk form of applyRecordDelta (`npm run seed`'s task batches): every DID's change in one statement
 * and one NOTIFY RELOAD_ALL instead of one per DID. For deltas of new tasks (no negative counts: a
 * negative change would be clamped at 0 before it is added).
 */
export async function applyRecordDeltaBulk(tx: Sql | TransactionSql, delta: Map<string, MarketRecord>): Promise<void> {
  if (delta.size === 0) return;
  const rows = [...delta.keys()].sort().map((did) => {
    const d = delta.get(did)!;
    return { did, posted: d.posted, completed: d.completed, cancelled_after_delivery: d.cancelledAfterDelivery, delivered: d.delivered, paid: d.paid };
  });
  await tx`
    insert into market_records (did, posted, completed, cancelled_after_delivery, delivered, paid)
    select x.did, greatest(0, x.posted), greatest(0, x.completed), greatest(0, x.cancelled_after_delivery), greatest(0, x.delivered), greatest(0, x.paid)
      from json_to_recordset(${tx.json(rows as never)}::json) as x(did text, posted int, completed int, cancelled_after_delivery int, delivered int, paid int)
    on conflict (did) do update set
      posted = greatest(0, market_records.posted + excluded.posted),
      completed = greatest(0, market_records.completed + excluded.completed),
      cancelled_after_delivery = greatest(0, market_records.cancelled_after_delivery + excluded.cancelled_after_delivery),
      delivered = greatest(0, market_records.delivered + excluded.delivered),
      paid = greatest(0, market_records.paid + excluded.paid),
      updated_at = now()`;
  await notifyChange(tx, CHANNELS.marketRecord, RELOAD_ALL);
}
