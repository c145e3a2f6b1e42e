import type { Sql } from 'postgres';

/**
 * Postings per poster (issue 20 item 2): one row per task a poster starts, written before its workflow
 * starts, under a per-poster advisory lock that also counts (db/queries/taskPostings.ts):
 *   - the open unfunded tasks of the poster (tasks projection) and its postings not projected yet
 *     (MARKET_UNFUNDED_TASKS_MAX), and
 *   - its postings of the last 24 h (MARKET_POSTS_PER_DAY).
 * funded: posted with the poster's key and funded in the same request (POST /market/tasks/signed with
 * escrow, its balance checked first): not an unfunded posting while its funding runs.
 * Kept in PostgreSQL so every API instance counts the same; rows older than the day are swept.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table task_postings (
      task_id     uuid primary key,
      poster_did  text not null,
      funded      boolean not null default false,
      created_at  timestamptz not null default now()
    );
    create index task_postings_poster on task_postings (poster_did, created_at);
    create index task_postings_created on task_postings (created_at);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists task_postings;`);
}
