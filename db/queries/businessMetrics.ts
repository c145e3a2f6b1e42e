/**
 * What the worker's business gauges read from PostgreSQL (issue 30; worker/businessMetrics.ts): a few
 * aggregates over the payments and tasks tables, run every METRICS_BUSINESS_EVERY_MS, never per scrape.
 */
import type { Sql } from 'postgres';

/**
 * The payments still without an outcome: neither refunded nor failed, and their request (if any) not
 * ended with its passport or upgrade (the payment reconciler's work list, db/queries/payments.ts
 * listUnfinishedPayments, at every age), counted by age: `bounds` are the buckets' upper bounds in
 * seconds (ascending), the last bucket is open (counts has bounds.length + 1 entries).
 */
export async function unfinishedPaymentAges(sql: Sql, bounds: readonly number[]): Promise<{ counts: number[]; oldestSeconds: number }> {
  const rows = await sql<{ bucket: number; n: string; oldest: number }[]>`
    select width_bucket(age, ${sql.array(bounds.map(Number))}::float8[]) as bucket, count(*) as n, max(age) as oldest
      from (select extract(epoch from now() - p.created_at)::float8 as age
              from payments p
              left join passport_issuances i on i.payment_transaction_id = p.transaction_id
              left join passport_upgrades u on u.payment_transaction_id = p.transaction_id
             where p.status in ('verified', 'settled')
               and coalesce(i.status, u.status, 'none') not in ('issued', 'upgraded')) unfinished
     group by 1`;
  const counts = [...bounds.map(() => 0), 0];
  let oldestSeconds = 0;
  for (const r of rows) {
    counts[r.bucket] = Number(r.n);
    oldestSeconds = Math.max(oldestSeconds, r.oldest);
  }
  return { counts, oldestSeconds };
}

/** Refunds recorded: passport payments refunded, task escrows refunded. */
export async function refundCounts(sql: Sql): Promise<{ payment: number; escrow: number }> {
  const [row] = await sql<{ payment: string; escrow: string }[]>`
    select (select count(*) from payments where status = 'refunded') as payment,
           (select count(*) from tasks where escrow_status = 'refunded') as escrow`;
  return { payment: Number(row?.payment ?? 0), escrow: Number(row?.escrow ?? 0) };
}

/** What the funded, unpaid task escrows hold according to the projection (tinybars). */
export async function escrowHeldTinybars(sql: Sql): Promise<bigint> {
  const [row] = await sql<{ held: string | null }[]>`
    select coalesce(sum((record->>'escrowedTinybars')::numeric), 0)::text as held from tasks where escrow_status = 'funded'`;
  return BigInt(row?.held ?? '0');
}

/**
 * Webhook backlog (issue 28): events after each active subscription's cursor that reach it (its
 * types; its owner's, or new work its capability filter matches), at most 10000 counted per
 * subscription, and the age in seconds of the oldest of them.
 */
export async function webhookBacklog(sql: Sql): Promise<{ events: number; oldestSeconds: number }> {
  const [row] = await sql<{ events: string; oldest: number | null }[]>`
    select coalesce(sum(b.n), 0)::text as events, extract(epoch from now() - min(b.oldest))::float8 as oldest
      from webhook_subscriptions w
      cross join lateral (
        select count(*) as n, min(x.occurred_at) as oldest
          from (select e.occurred_at from events e
                 where (w.cursor is null or e.id > w.cursor) and e.type = any(w.events)
                   and (e.audience @> array[w.owner_did]
                        or (cardinality(w.capabilities) > 0 and e.type in ('task.posted', 'task.released') and e.capabilities && w.capabilities))
                 order by e.id limit 10000) x) b
     where w.status = 'active'`;
  return { events: Number(row?.events ?? 0), oldestSeconds: Math.max(0, row?.oldest ?? 0) };
}
