/**
 * Contract of escrowReconciler (workflows/escrowReconciler.ts; issue 26 item 4): one pass over the
 * marketplace tasks whose taskLifecycle workflow is closed (terminated, failed, timed out, cancelled)
 * or gone while their task is still open or their escrow still holds money or a pending schedule.
 * Started by the Temporal Schedule escrow-reconciler:{taskQueue} that every worker ensures
 * (worker/escrowReconciler.ts); its runs take the schedule's id as their id prefix.
 */
import { workflowContract } from './contract.js';

/** The escrow reconciler's schedule (and the prefix of its runs' ids): one per task queue. */
export function escrowReconcilerScheduleId(taskQueue: string): string {
  return `escrow-reconciler:${taskQueue}`;
}

/**
 * The stable log messages of the reconciler (activities/ledger/marketEscrowReconciler.ts), for
 * alerts to match: every task it settles is logged at warn with ESCROW_RECONCILED_LOG, every one it
 * could not settle at error with ESCROW_UNRESOLVED_LOG. Either means a task workflow stopped with
 * money or a task still open.
 */
export const ESCROW_RECONCILED_LOG = 'escrow reconciler: settled the escrow of a task whose workflow is closed';
export const ESCROW_UNRESOLVED_LOG = 'escrow reconciler: could not settle the escrow of a task whose workflow is closed';

export interface EscrowReconcilerInput {
  /**
   * a task workflow closed (or, when Temporal has no record of it, a task unchanged) for less than this
   * is left alone: it may be reset or be between runs (ESCROW_RECONCILE_GRACE_S). The activities never
   * take less than their own configured grace, whatever the input says.
   */
  graceMs: number;
  /** tasks settled per pass (ESCROW_RECONCILE_MAX, default 20); the rest wait for the next pass */
  limit?: number;
  /** open tasks per pass whose workflow is looked up one by one, for workflows Temporal no longer lists (ESCROW_RECONCILE_SAMPLE, default 20) */
  sample?: number;
  timings?: { activityTimeoutMs?: number; retryInitialMs?: number; retryMaximumMs?: number };
}

/** Why a task was picked: its workflow's status as Temporal reports it ('NOT_FOUND' when it has no record). */
export type StrandedWorkflowStatus = 'TERMINATED' | 'FAILED' | 'TIMED_OUT' | 'CANCELLED' | 'COMPLETED' | 'CONTINUED_AS_NEW' | 'NOT_FOUND';

export interface StrandedTask {
  taskId: string;
  workflowStatus: StrandedWorkflowStatus;
}

export interface EscrowReconcileAction {
  taskId: string;
  /**
   * refunded: the escrow went back to the poster (task cancelled); paid: a recorded completion (or the
   * review window's release that was due) was paid to the claimer (task completed); cancelled: nothing
   * was held, pending schedules were deleted (task cancelled); skipped: the workflow runs again, is
   * inside the grace, or the task needs nothing; unresolved: tried again next pass
   */
  action: 'refunded' | 'paid' | 'cancelled' | 'skipped' | 'unresolved';
  workflowStatus: StrandedWorkflowStatus | 'RUNNING';
  /** the payout or refund transaction, or why */
  detail?: string;
}

export interface EscrowReconcilerResult {
  checked: number;
  actions: EscrowReconcileAction[];
}

export const escrowReconcilerContract = workflowContract<EscrowReconcilerInput, EscrowReconcilerResult>()({
  type: 'escrowReconciler',
  workflowId: escrowReconcilerScheduleId,
});
