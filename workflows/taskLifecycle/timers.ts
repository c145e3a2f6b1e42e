/**
 * The taskLifecycle workflow's clock, after posting: it sleeps until the next thing due and does it
 * under the step mutex.
 *
 *   renewals     a pending schedule is renewed (delete + create) before it expires, or marked
 *                expired after maxRenewals (escrow.ts renewOrExpire); since issue 26 maxRenewals is
 *                0 unless the timings say otherwise (run.ts UNFUNDED_SCHEDULES_LAPSE_PATCH): an
 *                unsigned schedule lapses at its expiry
 *   deadline     at the optional deadline an unfinished task is cancelled and refunded (task.expired);
 *                since the escrow promises, never a delivered one (its review window runs)
 *   promises     (ESCROW_PROMISES_PATCH; DESIGN 11 "Escrow promises") the funding window cancels an
 *                escrow still unfunded, the claim window lapses a claim with no delivery back to
 *                posted, the review window pays a delivered escrow task to the claimer
 *   history      when the history grows, it returns 'continue' and the workflow continues as new
 */
import { ActivityFailure, allHandlersFinished, condition, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { escrowUnfunded } from '../../domain/market.js';
import type { Escrow } from './escrow.js';
import { ClaimerDidKey, type Commit, type TaskRun } from './run.js';
import type { StepMutex } from './stepMutex.js';

export interface TimerDeps {
  run: TaskRun;
  commit: Commit;
  exclusive: StepMutex['exclusive'];
  escrow: Escrow;
  /** cancels the task (escrow unwound) with this message type and reason */
  cancel: (type: 'task.cancelled' | 'task.expired', reason?: string) => Promise<void>;
  /** the escrow promises apply (patched) */
  promises: boolean;
  /** continue as new once the history has this many events (tests) */
  continueAsNewAfterEvents?: number;
}

export const isTerminal = (run: TaskRun) => run.task.status === 'completed' || run.task.status === 'cancelled';

/** Runs the task's timers until the task ends ('done') or its history should continue as new ('continue', no step running then). */
export async function runTimers(d: TimerDeps): Promise<'done' | 'continue'> {
  const { run, commit, exclusive, escrow, promises } = d;
  const task = run.task;
  const terminal = () => isTerminal(run);
  const historyLarge = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || (d.continueAsNewAfterEvents !== undefined && info.historyLength >= d.continueAsNewAfterEvents);
  };

  // ---------------------------------------------------------------- escrow promises (patched)

  const timeOf = (iso: string | null | undefined) => (iso ? Date.parse(iso) : null);
  /** after a ledger failure in a promise's step, the promises wait this long before trying again */
  let promisesPausedUntil = 0;
  /** when each window ends, for the windows that apply to the task as it is now */
  const promiseDue = () => ({
    funding: task.escrow && escrowUnfunded(task) ? timeOf(task.fundingEndsAt) : null,
    claim: task.status === 'claimed' ? timeOf(task.claimEndsAt) : null,
    // the escrow is released only once it holds the money (an unfunded task ends at its funding window)
    review: task.status === 'delivered' && task.escrow && task.escrowStatus === 'funded' ? timeOf(task.reviewEndsAt) : null,
  });

  /** The claim window passed with no delivery: the task is posted again, for anyone to claim. */
  async function lapseClaim(): Promise<void> {
    const lapsed = task.claimerDid;
    task.status = 'posted';
    task.claimerDid = null;
    task.claimEndsAt = null;
    await commit('task.expired', { claimerDid: lapsed, reason: 'claim window' });
    upsertSearchAttributes([{ key: ClaimerDidKey, value: null }]);
  }

  /** Acts on the first window that has passed (under the mutex, checked again there); true when one did. */
  async function keepPromises(now: number): Promise<boolean> {
    if (now < promisesPausedUntil) return false;
    const due = promiseDue();
    const passed = (at: number | null) => at !== null && now >= at;
    let step: (() => Promise<void>) | null = null;
    if (passed(due.funding)) step = () => d.cancel('task.expired', 'funding window');
    else if (passed(due.claim)) step = lapseClaim;
    else if (passed(due.review)) step = escrow.releaseAfterReview;
    if (!step) return false;
    const which = passed(due.funding) ? 'funding' : passed(due.claim) ? 'claim' : 'review';
    try {
      await exclusive(async () => {
        // a step may have run meanwhile (funded, delivered, completed, cancelled)
        if (!terminal() && passed(promiseDue()[which])) await step!();
      });
    } catch (err) {
      // the ledger refused or could not be reached within the step's attempts: the promise is kept later
      if (!(err instanceof ActivityFailure)) throw err;
      promisesPausedUntil = Date.now() + 60_000;
      run.version++;
    }
    return true;
  }

  // ---------------------------------------------------------------- the loop

  while (!terminal()) {
    // since the escrow promises the deadline no longer cancels a delivered task (its review window runs)
    const deadlineAt = task.deadline && !(promises && task.status === 'delivered') ? new Date(task.deadline).getTime() : null;
    const due = promises ? promiseDue() : null;
    const pause = promises && promisesPausedUntil > Date.now() ? promisesPausedUntil : null;
    const windows = due ? [due.funding, due.claim, due.review].map((x) => (x !== null && pause !== null ? Math.max(x, pause) : x)) : [];
    const times = [escrow.renewAt(run.scheduleExpiresAt, run.renewals), escrow.renewAt(run.topUpExpiresAt, run.topUpRenewals), deadlineAt, ...windows].filter((x): x is number => x !== null);
    const next = times.length > 0 ? Math.min(...times) : null;
    const seen = run.version;
    const wait = next === null ? undefined : Math.max(1, next - Date.now());
    await condition(() => terminal() || run.version !== seen || (historyLarge() && !run.busy), wait);
    if (terminal()) break;
    if (historyLarge() && !run.busy) {
      await condition(() => allHandlersFinished() && !run.busy);
      return 'continue';
    }
    const now = Date.now();
    if (deadlineAt !== null && now >= deadlineAt) {
      await exclusive(async () => {
        if (!terminal() && !(promises && task.status === 'delivered')) await d.cancel('task.expired', 'deadline');
      });
      continue;
    }
    if (promises && (await keepPromises(now))) continue;
    const fundDue = escrow.renewAt(run.scheduleExpiresAt, run.renewals);
    if (fundDue !== null && now >= fundDue) {
      if (task.escrowStatus === 'scheduled') await exclusive(() => escrow.renewOrExpire('fund'));
      else run.scheduleExpiresAt = null;
    }
    const topUpDue = escrow.renewAt(run.topUpExpiresAt, run.topUpRenewals);
    if (topUpDue !== null && now >= topUpDue) {
      if (task.topUpScheduleId) await exclusive(() => escrow.renewOrExpire('topup'));
      else run.topUpExpiresAt = null;
    }
  }
  return 'done';
}
