/**
 * Quotas shared across API instances (migration 0036, quota_counters): fixed windows aligned to the
 * epoch (a window of 24 h starts at UTC midnight), counted with one atomic upsert, so every instance
 * sees the same count and two concurrent takes never both get the last place. The one mechanism of
 * the per-caller quotas and per-day budgets that make the operator pay: trust scans, challenges,
 * checks and attestations (one place per request), the sponsored registry registrations of a UTC
 * day (one place each, taken in the registration's transaction; migration 0051 moved them here), and
 * the operator-paid A2A bytes (as many places as the message has bytes; migration 0050).
 */
import type { Sql, TransactionSql } from 'postgres';

/** A pool or a transaction (a take may be part of the caller's transaction). */
type Q = Sql | TransactionSql;

export interface QuotaSpec {
  /** which quota (e.g. 'trust.scan.ip') */
  scope: string;
  /** what it counts (an address digest, a DID, a registrable domain) */
  subject: string;
  /** places per window */
  max: number;
  windowMs: number;
}

export interface QuotaTake {
  ok: boolean;
  limit: number;
  /** places left in the window after this take (refused: left as they are) */
  remaining: number;
  /** when the window closes */
  resetAt: Date;
}

/**
 * Rows of closed windows deleted by each take (keeps the table near its live size without a job):
 * closed by the caller's clock and by the database's, so a caller whose clock is elsewhere (a test
 * moving the day) never sweeps the live windows of the others.
 */
const SWEEP_PER_TAKE = 20;

export function quotaWindow(now: Date, windowMs: number): { start: Date; end: Date } {
  const start = Math.floor(now.getTime() / windowMs) * windowMs;
  return { start: new Date(start), end: new Date(start + windowMs) };
}

/**
 * Takes `amount` places (default one) of `q` in the window holding `now` if the window's count stays
 * within `q.max`; ok false (nothing counted) otherwise.
 */
export async function takeQuota(sql: Q, q: QuotaSpec, now: Date = new Date(), amount = 1): Promise<QuotaTake> {
  const { start, end } = quotaWindow(now, q.windowMs);
  await sql`
    delete from quota_counters where ctid in (
      select ctid from quota_counters where window_end < ${now} and window_end < now() limit ${SWEEP_PER_TAKE})`;
  if (amount <= q.max) {
    const rows = await sql<{ count: number }[]>`
      insert into quota_counters (scope, subject, window_start, window_end, count)
      values (${q.scope}, ${q.subject}, ${start}, ${end}, ${amount})
      on conflict (scope, subject, window_start) do update set count = quota_counters.count + excluded.count
        where quota_counters.count::bigint + excluded.count <= ${q.max}
      returning count`;
    const count = rows[0]?.count;
    if (count !== undefined) return { ok: true, limit: q.max, remaining: Math.max(0, q.max - count), resetAt: end };
  }
  const [row] = await sql<{ count: number }[]>`
    select count from quota_counters where scope = ${q.scope} and subject = ${q.subject} and window_start = ${start}`;
  return { ok: false, limit: q.max, remaining: Math.max(0, q.max - (row?.count ?? 0)), resetAt: end };
}

/** Gives back a place taken in the window holding `now` (work that was refused after the take). */
export async function giveBackQuota(sql: Q, q: Pick<QuotaSpec, 'scope' | 'subject' | 'windowMs'>, now: Date = new Date()): Promise<void> {
  const { start } = quotaWindow(now, q.windowMs);
  await sql`
    update quota_counters set count = count - 1
    where scope = ${q.scope} and subject = ${q.subject} and window_start = ${start} and count > 0`;
}
