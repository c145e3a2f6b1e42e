import type { Sql } from 'postgres';
import type { TaskRecord } from '../../domain/market.js';
import { addRecords, contributions, factsOfTask, type MarketRecord } from '../../domain/marketRecord.js';

/**
 * Each DID's marketplace record (domain/marketRecord.ts; issue 19 item 7): the counts every directory
 * entry and agent card shows, summed from the tasks projection. db/queries/tasks.ts upsertTask adds
 * the change a task write makes (its record before and after) in the same transaction and announces
 * the DID on NOTIFY market_record_changed, so every API process's memory follows. The rows are
 * derived: this migration fills them from the tasks written so far, and the same sum over the tasks
 * projection (or a fold of the marketplace topic) gives them again.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table market_records (
      did                        text primary key,
      posted                     integer not null default 0 check (posted >= 0),
      completed                  integer not null default 0 check (completed >= 0),
      cancelled_after_delivery   integer not null default 0 check (cancelled_after_delivery >= 0),
      delivered                  integer not null default 0 check (delivered >= 0),
      paid                       integer not null default 0 check (paid >= 0),
      updated_at                 timestamptz not null default now()
    );
    create index tasks_poster_open on tasks (poster_did) where status in ('posted', 'claimed', 'delivered');
  `);
  const sums = new Map<string, MarketRecord>();
  const rows = await sql<{ record: TaskRecord }[]>`select record from tasks`;
  for (const r of rows) addRecords(sums, contributions(factsOfTask(r.record)));
  for (const [did, m] of sums) {
    await sql`insert into market_records (did, posted, completed, cancelled_after_delivery, delivered, paid)
              values (${did}, ${m.posted}, ${m.completed}, ${m.cancelledAfterDelivery}, ${m.delivered}, ${m.paid})`;
  }
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists market_records; drop index if exists tasks_poster_open;`);
}
