/**
 * escrowReconciler: one pass over the marketplace tasks stranded by a closed workflow (issue 26 item
 * 4; DESIGN 12 "Money integrity II"), run by a Temporal Schedule (escrow-reconciler:{taskQueue},
 * every ESCROW_RECONCILE_EVERY_S; see worker/escrowReconciler.ts), so each pass and what it did are
 * visible in the Temporal UI.
 *
 * A task is stranded when it is still open, or its escrow still holds money or a pending schedule,
 * while its taskLifecycle workflow is closed (terminated by an operator or an intruder, failed,
 * timed out, cancelled) or unknown to Temporal, for longer than the grace. No Update reaches such a
 * task any more (the API answers "takes no more steps"), so without this pass its escrow stays in
 * the escrow account for ever. Each stranded task is settled by one activity
 * (activities/ledger/marketEscrowReconciler.ts), under the task's own idempotency keys, so a
 * payout or refund the workflow had started is finished, never made twice:
 *   - a completion was recorded (a payout under the task's payout key, status completed, or the
 *     review window's release that was due): the escrow pays the claimer (task completed);
 *   - otherwise pending schedules are deleted (the poster is never charged later) and whatever the
 *     escrow holds goes back to the poster under the task's refund key (task cancelled).
 * The projection and the marketplace topic say so, and the activity logs every settlement at warn
 * (ESCROW_RECONCILED_LOG) and every failure at error (ESCROW_UNRESOLVED_LOG) for alerts.
 *
 * Tasks are settled one after another (at most `limit` per pass); a task that fails is reported
 * unresolved and tried again by the next pass.
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { EscrowReconcilerActivities } from '../activities/ledger/marketEscrowReconciler.js';
import type { EscrowReconcileAction, EscrowReconcilerInput, EscrowReconcilerResult } from './contracts/escrowReconciler.js';
import { RETRY_MAXIMUM_MS } from './activityOptions.js';

export async function escrowReconciler(input: EscrowReconcilerInput): Promise<EscrowReconcilerResult> {
  const t = input.timings ?? {};
  const acts = proxyActivities<EscrowReconcilerActivities>({
    startToCloseTimeout: t.activityTimeoutMs ?? 120_000,
    retry: { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2, maximumAttempts: 3 },
  });
  const stranded = await acts.findStrandedTasks({ graceMs: input.graceMs, limit: input.limit ?? 20, sample: input.sample ?? 20 });
  const actions: EscrowReconcileAction[] = [];
  for (const s of stranded) {
    try {
      actions.push(await acts.reconcileStrandedTask({ taskId: s.taskId, graceMs: input.graceMs }));
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      actions.push({ taskId: s.taskId, action: 'unresolved', workflowStatus: s.workflowStatus, detail: err.cause?.message ?? err.message });
    }
  }
  return { checked: stranded.length, actions };
}
