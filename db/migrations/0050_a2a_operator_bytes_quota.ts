import type { Sql } from 'postgres';

/**
 * One quota mechanism (issue 21): the operator-paid A2A byte budget (migration 0030,
 * a2a_operator_bytes, one row per sender DID per UTC day) is counted in quota_counters (migration
 * 0036) like every other per-day quota, under scope 'a2a.operator.bytes' (subject the sender DID,
 * one window per UTC day, count = bytes). Today's and yesterday's counters move over (older ones no
 * longer count for anything), then the old table goes. Budgets, codes and headers stay the same.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    insert into quota_counters (scope, subject, window_start, window_end, count)
    select 'a2a.operator.bytes', sender_did, (day::timestamp at time zone 'UTC'), ((day + 1)::timestamp at time zone 'UTC'), least(bytes, 2147483647)::integer
    from a2a_operator_bytes
    where day >= (now() at time zone 'UTC')::date - 1
    on conflict (scope, subject, window_start) do update set count = greatest(quota_counters.count, excluded.count);
    drop table a2a_operator_bytes;
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table a2a_operator_bytes (
      sender_did  text not null,
      day         date not null,
      bytes       bigint not null check (bytes >= 0),
      primary key (sender_did, day)
    );
    create index a2a_operator_bytes_day on a2a_operator_bytes (day);
    insert into a2a_operator_bytes (sender_did, day, bytes)
    select subject, (window_start at time zone 'UTC')::date, count from quota_counters where scope = 'a2a.operator.bytes';
    delete from quota_counters where scope = 'a2a.operator.bytes';
  `);
}
