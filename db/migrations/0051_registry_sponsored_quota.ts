import type { Sql } from 'postgres';

/**
 * One quota mechanism (issue 21): the sponsored registry budget (migration 0012,
 * registry_sponsored_days, one counter per UTC day) is counted in quota_counters (migration 0036)
 * like every other per-day quota, under scope 'registry.sponsored' (subject '*': the budget is the
 * service's, one window per UTC day). Today's and later counters move over (earlier days no longer
 * count for anything), then the old table goes. registry_keys.sponsored_day still names the day a
 * withdrawn registration gives its place back to.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    insert into quota_counters (scope, subject, window_start, window_end, count)
    select 'registry.sponsored', '*', (day::timestamp at time zone 'UTC'), ((day + 1)::timestamp at time zone 'UTC'), used
    from registry_sponsored_days
    where day >= (now() at time zone 'UTC')::date
    on conflict (scope, subject, window_start) do update set count = greatest(quota_counters.count, excluded.count);
    drop table registry_sponsored_days;
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table registry_sponsored_days (
      day   date primary key,
      used  integer not null check (used >= 0)
    );
    insert into registry_sponsored_days (day, used)
    select (window_start at time zone 'UTC')::date, count from quota_counters where scope = 'registry.sponsored' and subject = '*';
    delete from quota_counters where scope = 'registry.sponsored';
  `);
}
