import type { Sql } from 'postgres';

/**
 * Quotas shared by every API instance (DESIGN.md section 11 "Costs"; issue 20): one row per
 * (scope, subject, window start), counted atomically by db/queries/quotas.ts takeQuota. scope names
 * the quota (e.g. trust.scan.ip, trust.attest.did), subject what it counts (a sha256 of an address,
 * a DID, a registrable domain). Rows whose window has closed are swept by the writes themselves
 * (bounded per write), so the table holds about one row per active subject and window.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table quota_counters (
      scope         text not null,
      subject       text not null,
      window_start  timestamptz not null,
      window_end    timestamptz not null,
      count         integer not null default 0 check (count >= 0),
      primary key (scope, subject, window_start)
    );
    create index quota_counters_window_end on quota_counters (window_end);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists quota_counters;`);
}
