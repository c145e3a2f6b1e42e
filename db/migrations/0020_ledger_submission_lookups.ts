import type { Sql } from 'postgres';

/**
 * Lookups of the ledger writes this service recorded (issue 19):
 * - the ScheduleCreate of a schedule, by the schedule id (item 5): once the ledger has purged an
 *   expired schedule, the scheduled transaction id in that create's receipt is how its outcome is
 *   still read from the ledger (receipt, then the mirror);
 * - a task's writes, by the prefix of their idempotency keys (item 4): what the task escrowed and
 *   what was paid out of it, which bounds every escrow payout and refund.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create index ledger_submissions_schedule_id on ledger_submissions ((receipt->>'scheduleId')) where kind = 'schedule_create';
    create index ledger_submissions_key_prefix on ledger_submissions (idempotency_key text_pattern_ops);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop index if exists ledger_submissions_schedule_id; drop index if exists ledger_submissions_key_prefix;`);
}
