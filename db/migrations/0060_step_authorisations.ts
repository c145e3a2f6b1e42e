import type { Sql } from 'postgres';

/**
 * One-time authorisations of money-moving workflow messages (issue 26 item 1, domain/stepAuthorisation.ts):
 * written by the API after it checked the caller, used once by the workflow run (and Update) that acts
 * on it. `used_by` is `{runId}/{updateId}` (or `{runId}/start`), so an activity retried by the same
 * step finds its own use again, and any other run or Update is refused.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table step_authorisations (
      nonce uuid primary key,
      workflow_id text not null,
      message text not null,
      caller_did text not null,
      args_sha256 text not null,
      created_at timestamptz not null default now(),
      used_by text,
      used_at timestamptz
    );
    create index step_authorisations_created_at on step_authorisations (created_at);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table step_authorisations;`);
}
