/**
 * The posting caps of the marketplace (db/migrations/0026_task_postings.ts; issue 20 item 2), counted
 * under a per-poster advisory lock so concurrent posts on any number of API instances agree:
 *   unfunded   open tasks of the poster whose price is not in escrow (an escrow schedule waiting for
 *              the poster's signature or expired, or a task without escrow), plus its postings whose
 *              posting step has not reached the projection yet (for at most PENDING_GRACE_MS)
 *   daily      its postings of the last 24 h
 * A posting retried with the same task id (Idempotency-Key replay) finds its row and passes.
 */
import type { Sql } from 'postgres';

const DAY_MS = 24 * 3600_000;
/** A posting not projected after this long (its workflow never started) stops counting as open. */
const PENDING_GRACE_MS = 15 * 60_000;
/** A task posted with the poster's key counts as unfunded only once its funding had this long to finish. */
const FUNDING_GRACE_MS = 5 * 60_000;

export interface PostingLimits {
  unfundedMax: number;
  dailyMax: number;
  /** the funding window: when the oldest unfunded escrow task of the poster is cancelled at the latest */
  fundingWindowMs: number;
}

export type PostingOutcome =
  | { ok: true }
  | { ok: false; refused: 'unfunded'; open: number; resetAt: Date }
  | { ok: false; refused: 'daily'; resetAt: Date };

class Refused extends Error {
  constructor(readonly outcome: PostingOutcome) {
    super('refused');
  }
}

/**
 * Records a posting if the poster's caps allow it. `funded`: an escrow task funded in the same request
 * (POST /market/tasks/signed, balance checked): only the daily quota applies to it, and it does not
 * count as a pending unfunded posting while its funding runs (a funding that fails leaves an unfunded
 * task, which the projection then counts).
 */
export async function reservePosting(sql: Sql, r: { taskId: string; posterDid: string; now: Date; limits: PostingLimits; funded?: boolean }): Promise<PostingOutcome> {
  const dayStart = new Date(r.now.getTime() - DAY_MS);
  try {
    return await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`task-postings:${r.posterDid}`}, 0))`;
      const [mine] = await tx`select 1 from task_postings where task_id = ${r.taskId}`;
      if (mine) return { ok: true as const };
      await tx`delete from task_postings where poster_did = ${r.posterDid} and created_at <= ${dayStart}`;
      const recent = await tx<{ created_at: Date }[]>`
        select created_at from task_postings where poster_did = ${r.posterDid} and created_at > ${dayStart} order by created_at asc`;
      if (recent.length >= r.limits.dailyMax) {
        // the count falls under the cap once the (len - max + 1) oldest postings have left the day
        const freeing = recent[recent.length - r.limits.dailyMax]!.created_at;
        throw new Refused({ ok: false, refused: 'daily', resetAt: new Date(freeing.getTime() + DAY_MS) });
      }
      if (r.funded) {
        await tx`insert into task_postings (task_id, poster_did, created_at, funded) values (${r.taskId}, ${r.posterDid}, ${r.now}, true)`;
        return { ok: true as const };
      }
      // (a task posted with the poster's key in the last minutes may still be funding: not counted yet)
      // One statement, so one snapshot: a posting whose task row is projected between two statements
      // would count in neither (not pending any more, not open yet) and let one posting past the cap.
      const [counts] = await tx<{ open: number; oldest: Date | null; pending: number }[]>`
        select
          (select count(*)::int from tasks t
            where t.poster_did = ${r.posterDid} and t.status in ('posted', 'claimed', 'delivered') and t.escrow_status in ('none', 'scheduled', 'expired')
              and not exists (select 1 from task_postings p where p.task_id = t.task_id and p.funded and p.created_at > ${new Date(r.now.getTime() - FUNDING_GRACE_MS)})) as open,
          (select min(t.created_at) from tasks t
            where t.poster_did = ${r.posterDid} and t.status in ('posted', 'claimed', 'delivered') and t.escrow_status in ('scheduled', 'expired')
              and not exists (select 1 from task_postings p where p.task_id = t.task_id and p.funded and p.created_at > ${new Date(r.now.getTime() - FUNDING_GRACE_MS)})) as oldest,
          (select count(*)::int from task_postings p
            where p.poster_did = ${r.posterDid} and not p.funded and p.created_at > ${new Date(r.now.getTime() - PENDING_GRACE_MS)}
              and not exists (select 1 from tasks t where t.task_id = p.task_id)) as pending`;
      const open = { n: counts?.open ?? 0, oldest: counts?.oldest ?? null };
      const count = open.n + (counts?.pending ?? 0);
      if (count >= r.limits.unfundedMax) {
        const oldest = open.oldest ? new Date(open.oldest).getTime() + r.limits.fundingWindowMs : r.now.getTime() + r.limits.fundingWindowMs;
        throw new Refused({ ok: false, refused: 'unfunded', open: count, resetAt: new Date(Math.max(oldest, r.now.getTime() + 1000)) });
      }
      await tx`insert into task_postings (task_id, poster_did, created_at) values (${r.taskId}, ${r.posterDid}, ${r.now})`;
      return { ok: true as const };
    });
  } catch (err) {
    if (err instanceof Refused) return err.outcome;
    throw err;
  }
}

/** Postings older than a day no longer count for anything. */
export async function sweepPostings(sql: Sql, now: Date): Promise<void> {
  await sql`delete from task_postings where created_at <= ${new Date(now.getTime() - DAY_MS)}`;
}
