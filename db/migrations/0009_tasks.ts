import type { Sql } from 'postgres';

/**
 * The marketplace projection (SPEC 2 "Task", 3; DESIGN.md section 10 "Marketplace"): one row per
 * task, written by the taskLifecycle workflow's projectTask activity after each step, in the same
 * transaction as NOTIFY task_changed (payload the task id), so every API process's memory follows.
 * - record is the whole task record as the workflow holds it (the API serves it); the columns
 *   beside it are what queries filter and order on.
 * - seq is the workflow's step number: a write with a lower or equal seq than the row's is ignored,
 *   so a retried or late activity never moves a task backwards.
 * - task_id is a UUIDv7, so ordering by it is newest-last by creation time.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table tasks (
      task_id          uuid primary key,
      status           text not null check (status in ('posted', 'claimed', 'delivered', 'completed', 'cancelled')),
      escrow_status    text not null check (escrow_status in ('none', 'scheduled', 'funded', 'released', 'refunded', 'cancelled', 'expired')),
      poster_did       text not null,
      claimer_did      text,
      price_tinybars   bigint not null check (price_tinybars > 0),
      capabilities     jsonb not null default '[]'::jsonb,
      schedule_id      text,
      payment_tx_id    text,
      seq              integer not null,
      record           jsonb not null,
      created_at       timestamptz not null default now(),
      updated_at       timestamptz not null default now()
    );
    create index tasks_poster on tasks (poster_did);
    create index tasks_claimer on tasks (claimer_did) where claimer_did is not null;
    create index tasks_status on tasks (status);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists tasks;`);
}
