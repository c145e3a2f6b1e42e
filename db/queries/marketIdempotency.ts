/**
 * Idempotency keys of the task-posting routes (db/migrations/0014_task_idempotency.ts): a key is
 * claimed for a task before the task's workflow starts; a retry with the same key finds the row.
 */
import type { Sql } from 'postgres';

export interface IdempotencyRow {
  poster_did: string;
  idempotency_key: string;
  request_sha256: string;
  task_id: string;
  created_at: Date;
}

/** The row holding (posterDid, key) when it is younger than ttlMs; null otherwise. */
export async function findIdempotencyKey(sql: Sql, posterDid: string, key: string, ttlMs: number): Promise<IdempotencyRow | null> {
  const [row] = await sql<IdempotencyRow[]>`
    select * from task_idempotency_keys
    where poster_did = ${posterDid} and idempotency_key = ${key} and created_at >= ${new Date(Date.now() - ttlMs)}`;
  return row ?? null;
}

/**
 * Records `taskId` for (posterDid, key) unless the key is already recorded and younger than ttlMs
 * (an older row is deleted first: an expired key is a new key). Answers the row that holds the key
 * and whether this call wrote it. INSERT ... ON CONFLICT DO NOTHING, so of two concurrent calls
 * exactly one writes and the other reads its row.
 */
export async function claimIdempotencyKey(
  sql: Sql,
  k: { posterDid: string; key: string; requestSha256: string; taskId: string; ttlMs: number },
): Promise<{ row: IdempotencyRow; created: boolean }> {
  const expired = new Date(Date.now() - k.ttlMs);
  for (let attempt = 0; ; attempt++) {
    await sql`delete from task_idempotency_keys where poster_did = ${k.posterDid} and idempotency_key = ${k.key} and created_at < ${expired}`;
    const [inserted] = await sql<IdempotencyRow[]>`
      insert into task_idempotency_keys (poster_did, idempotency_key, request_sha256, task_id, created_at)
      values (${k.posterDid}, ${k.key}, ${k.requestSha256}, ${k.taskId}, now())
      on conflict (poster_did, idempotency_key) do nothing
      returning *`;
    if (inserted) return { row: inserted, created: true };
    const [existing] = await sql<IdempotencyRow[]>`
      select * from task_idempotency_keys where poster_did = ${k.posterDid} and idempotency_key = ${k.key}`;
    // deleted between the two statements (it had just expired): claim it again
    if (existing) return { row: existing, created: false };
    if (attempt >= 2) throw new Error('idempotency key could not be claimed');
  }
}

/** Housekeeping: deletes keys recorded before `olderThan`, at most `batch` rows per statement. */
export async function deleteExpiredIdempotencyKeys(sql: Sql, olderThan: Date, batch = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const rows = await sql`
      delete from task_idempotency_keys
      where (poster_did, idempotency_key) in (
        select poster_did, idempotency_key from task_idempotency_keys where created_at < ${olderThan} limit ${batch})
      returning 1`;
    total += rows.length;
    if (rows.length < batch) return total;
  }
}
