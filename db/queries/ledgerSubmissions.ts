/** Queries of ledger_submissions: the record of every ledger write made through ledger/submit.ts. */
import type { Sql } from 'postgres';

export type SubmissionStatus = 'pending' | 'succeeded' | 'failed' | 'expired';

export interface LedgerSubmissionRow {
  id: bigint;
  idempotency_key: string;
  kind: string;
  transaction_id: string;
  transaction_ids: string[];
  transaction_bytes: Buffer;
  valid_until: Date;
  status: SubmissionStatus;
  ledger_status: string | null;
  receipt: Record<string, unknown> | null;
  attempts: number;
  created_at: Date;
  updated_at: Date;
}

export interface NewSubmission {
  idempotencyKey: string;
  kind: string;
  transactionId: string;
  transactionIds: string[];
  transactionBytes: Uint8Array;
  validUntil: Date;
}

export async function findSubmission(sql: Sql, idempotencyKey: string): Promise<LedgerSubmissionRow | null> {
  const rows = await sql<LedgerSubmissionRow[]>`
    select * from ledger_submissions where idempotency_key = ${idempotencyKey}`;
  return rows[0] ?? null;
}

/** Inserts the record of a transaction about to be submitted; returns null when the key exists. */
export async function insertSubmission(sql: Sql, s: NewSubmission): Promise<LedgerSubmissionRow | null> {
  const rows = await sql<LedgerSubmissionRow[]>`
    insert into ledger_submissions (idempotency_key, kind, transaction_id, transaction_ids, transaction_bytes, valid_until, status)
    values (${s.idempotencyKey}, ${s.kind}, ${s.transactionId}, ${sql.json(s.transactionIds)}, ${Buffer.from(s.transactionBytes)}, ${s.validUntil}, 'pending')
    on conflict (idempotency_key) do nothing
    returning *`;
  return rows[0] ?? null;
}

/**
 * Replaces an expired, provably-never-executed transaction with a new one (same key). Guarded by the
 * old transaction id so two workers cannot both replace it.
 */
export async function replaceSubmission(
  sql: Sql,
  idempotencyKey: string,
  previousTransactionId: string,
  s: Omit<NewSubmission, 'idempotencyKey' | 'kind'>,
): Promise<LedgerSubmissionRow | null> {
  const rows = await sql<LedgerSubmissionRow[]>`
    update ledger_submissions
       set transaction_id = ${s.transactionId}, transaction_ids = ${sql.json(s.transactionIds)},
           transaction_bytes = ${Buffer.from(s.transactionBytes)}, valid_until = ${s.validUntil},
           status = 'pending', ledger_status = null, receipt = null, attempts = attempts + 1, updated_at = now()
     where idempotency_key = ${idempotencyKey} and transaction_id = ${previousTransactionId}
       and status in ('pending', 'expired')
    returning *`;
  return rows[0] ?? null;
}

export async function markSubmission(
  sql: Sql,
  idempotencyKey: string,
  transactionId: string,
  status: SubmissionStatus,
  ledgerStatus: string | null,
  receipt: Record<string, unknown> | null,
): Promise<void> {
  await sql`
    update ledger_submissions
       set status = ${status}, ledger_status = ${ledgerStatus}, receipt = ${receipt ? sql.json(receipt as never) : null}, updated_at = now()
     where idempotency_key = ${idempotencyKey} and transaction_id = ${transactionId}`;
}

export async function listPendingSubmissions(sql: Sql, limit = 100): Promise<LedgerSubmissionRow[]> {
  return sql<LedgerSubmissionRow[]>`
    select * from ledger_submissions where status = 'pending' order by created_at asc limit ${limit}`;
}

/** The recorded, successful ScheduleCreate that made a schedule (its transaction id and receipt), if this service made it. */
export async function findScheduleCreate(sql: Sql, scheduleId: string): Promise<{ transactionId: string; scheduledTransactionId: string | null } | null> {
  const rows = await sql<{ transaction_id: string; scheduled: string | null }[]>`
    select transaction_id, receipt->>'scheduledTransactionId' as scheduled from ledger_submissions
     where kind = 'schedule_create' and status = 'succeeded' and receipt->>'scheduleId' = ${scheduleId} limit 1`;
  const r = rows[0];
  return r ? { transactionId: r.transaction_id, scheduledTransactionId: r.scheduled } : null;
}

/** Every recorded ledger write whose idempotency key starts with `prefix` (a task's workflow id and '/'). */
export async function submissionsWithPrefix(sql: Sql, prefix: string): Promise<Pick<LedgerSubmissionRow, 'idempotency_key' | 'kind' | 'status' | 'transaction_bytes' | 'receipt'>[]> {
  const pattern = prefix.replace(/[\\%_]/g, (c) => `\\${c}`) + '%';
  return sql<Pick<LedgerSubmissionRow, 'idempotency_key' | 'kind' | 'status' | 'transaction_bytes' | 'receipt'>[]>`
    select idempotency_key, kind, status, transaction_bytes, receipt from ledger_submissions where idempotency_key like ${pattern}`;
}
