/**
 * Activities of the escrow reconciler (workflows/escrowReconciler.ts; issue 26 item 4): the tasks
 * stranded by a closed task workflow, and the settlement of one.
 *
 *   findStrandedTasks      the task workflows Temporal lists as ended abnormally (terminated, failed,
 *                          timed out, cancelled) before the grace, whose task still awaits settlement
 *                          (domain/market.ts awaitsSettlement), then a random sample of such tasks
 *                          whose workflow is looked up one by one (closed, or unknown to Temporal: its
 *                          history gone past the retention, or the namespace lost)
 *   reconcileStrandedTask  checks again that the workflow is not running and the grace has passed,
 *                          then settles the task as its workflow would have: a recorded completion
 *                          (the task's payout key was used, status completed, or the review window's
 *                          release was due) is paid to the claimer under the payout key; otherwise
 *                          pending schedules are deleted (the poster is never charged later) and
 *                          what the escrow holds goes back to the poster under the refund key. Then
 *                          the marketplace topic message (task.completed / task.cancelled) and the
 *                          projection (+ NOTIFY task_changed), as the workflow's commit writes them.
 *
 * Money moves only through escrowBooks (activities/ledger/market.ts escrowTransfer): under the task's
 * own payout or refund key (the keys the task workflow uses, so a payout or refund it had started is
 * finished by the submitter, never paid twice), under the task's escrow lock, and never more than
 * the task holds by this service's own records and the ledger. The workflow's input is a claim: the
 * grace and the bounds are never below or above this worker's configuration.
 *
 * Every settlement is logged at warn (ESCROW_RECONCILED_LOG), every failure at error
 * (ESCROW_UNRESOLVED_LOG): both mean a task workflow stopped while it still had work to do.
 */
import { Context, log } from '@temporalio/activity';
import { WorkflowNotFoundError } from '@temporalio/client';
import type { Sql } from 'postgres';
import { parseHederaDid } from '@agent-passport/core/did';
import { awaitsSettlement, payoutOf, settledTask, type StrandedSettlement, type TaskMessage, type TaskRecord } from '../../domain/market.js';
import { findTask, sampleTasksAwaitingSettlement, tasksAwaitingSettlement, upsertTask } from '../../db/queries/marketTasks.js';
import { findSubmission, submissionsWithPrefix } from '../../db/queries/ledgerSubmissions.js';
import type { LedgerServices } from '../../ledger/services.js';
import { taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import {
  ESCROW_RECONCILED_LOG,
  ESCROW_UNRESOLVED_LOG,
  type EscrowReconcileAction,
  type StrandedTask,
  type StrandedWorkflowStatus,
} from '../../workflows/contracts/escrowReconciler.js';
import { createMarketLedgerActivities, escrowBooks } from './market.js';

/** The reconciler's bounds from the worker's configuration (ESCROW_RECONCILE_GRACE_S, _MAX, _SAMPLE). */
export interface EscrowReconcilerBounds {
  graceMs: number;
  maxPerPass: number;
  samplePerPass: number;
}

/** Closed task workflows read from Temporal's list per pass at most (newest closes first); the sample finds the rest. */
const LIST_SCAN_MAX = 5_000;
const LIST_PAGE = 500;

/** The workflow statuses of a closed run (anything else, RUNNING or PAUSED among them, is left alone). */
const CLOSED: ReadonlySet<string> = new Set(['TERMINATED', 'FAILED', 'TIMED_OUT', 'CANCELLED', 'COMPLETED', 'CONTINUED_AS_NEW']);

const TASK_WORKFLOW_ID = /^task:([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/;

export function createEscrowReconcilerActivities(deps: { sql: Sql; ledger: LedgerServices; bounds: EscrowReconcilerBounds }) {
  const { sql, ledger, bounds } = deps;
  const books = escrowBooks({ sql, ledger });
  const market = createMarketLedgerActivities({ sql, ledger });
  const graceOf = (asked: number) => Math.max(asked, bounds.graceMs);

  /** The task's workflow as Temporal has it now: its status and when it closed. */
  async function workflowOf(taskId: string): Promise<{ status: StrandedWorkflowStatus | 'RUNNING'; closedAt: number | null }> {
    try {
      const d = await Context.current().client.workflow.getHandle(taskWorkflowId(taskId)).describe();
      const name = d.status.name;
      return CLOSED.has(name) ? { status: name as StrandedWorkflowStatus, closedAt: d.closeTime?.getTime() ?? null } : { status: 'RUNNING', closedAt: null };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return { status: 'NOT_FOUND', closedAt: null };
      throw err;
    }
  }

  async function findStrandedTasks(input: { graceMs: number; limit: number; sample: number }): Promise<StrandedTask[]> {
    const graceMs = graceOf(input.graceMs);
    const limit = Math.max(0, Math.min(input.limit, bounds.maxPerPass));
    const sample = Math.max(0, Math.min(input.sample, bounds.samplePerPass));
    const before = new Date(Date.now() - graceMs);
    const found = new Map<string, StrandedWorkflowStatus>();

    // the abnormal ends Temporal lists (a task workflow that finishes its task completes; one that ends otherwise was stopped)
    const query =
      `WorkflowType = 'taskLifecycle' AND ExecutionStatus IN ('Terminated', 'Failed', 'TimedOut', 'Canceled') ` + `AND CloseTime < '${before.toISOString()}'`;
    let batch = new Map<string, StrandedWorkflowStatus>();
    const flush = async () => {
      for (const id of await tasksAwaitingSettlement(sql, [...batch.keys()])) if (found.size < limit) found.set(id, batch.get(id)!);
      batch = new Map();
    };
    let scanned = 0;
    for await (const w of Context.current().client.workflow.list({ query, pageSize: LIST_PAGE })) {
      const m = TASK_WORKFLOW_ID.exec(w.workflowId);
      if (m && !batch.has(m[1])) batch.set(m[1], w.status.name as StrandedWorkflowStatus);
      if (batch.size >= LIST_PAGE) await flush();
      if (found.size >= limit || ++scanned >= LIST_SCAN_MAX) break;
      Context.current().heartbeat();
    }
    await flush();

    // a sample of the tasks awaiting settlement, their workflows looked up one by one
    for (const taskId of await sampleTasksAwaitingSettlement(sql, before, sample)) {
      if (found.size >= limit) break;
      if (found.has(taskId)) continue;
      const wf = await workflowOf(taskId);
      if (wf.status === 'RUNNING') continue;
      if (wf.closedAt !== null && wf.closedAt > before.getTime()) continue;
      found.set(taskId, wf.status);
    }
    return [...found].map(([taskId, workflowStatus]) => ({ taskId, workflowStatus }));
  }

  /** The step number after everything the task's workflow wrote: its projection and every topic message it recorded (m{seq} keys). */
  async function nextSeq(taskId: string, projected: number): Promise<number> {
    let seq = projected;
    for (const r of await submissionsWithPrefix(sql, `task:${taskId}/m`)) {
      const n = /\/m(\d+)$/.exec(r.idempotency_key);
      if (n) seq = Math.max(seq, Number(n[1]));
    }
    return seq + 1;
  }

  /** Deletes the task's pending schedules (ScheduleDelete under the task's keys): a schedule that had run leaves its amount in escrow, which escrowHeld counts. */
  async function deletePending(task: TaskRecord): Promise<void> {
    const pending = [task.escrowStatus === 'scheduled' ? task.scheduleId : null, task.topUpScheduleId].filter((id): id is string => id !== null);
    for (const scheduleId of pending) await market.deleteEscrowSchedule({ idempotencyKey: `task:${task.taskId}/reconcile-delete-${scheduleId}`, scheduleId });
  }

  /** Refunds whatever the task still holds to the poster under its refund key (or finishes the refund recorded under it); null when nothing is held or recorded. */
  async function refundHeld(task: TaskRecord): Promise<string | null> {
    const key = `task:${task.taskId}/refund`;
    const recorded = await findSubmission(sql, key);
    if (!recorded && (await books.escrowHeld(task.taskId, key)) <= 0n) return null;
    const poster = parseHederaDid(task.posterDid)?.accountId ?? '';
    return (await books.escrowTransfer(task.taskId, key, 'refund', (held) => [{ to: poster, amountTinybars: held }])).transactionId;
  }

  /** Pays the claimer what the task holds, up to the price, less the fee, under its payout key (or finishes the payout recorded under it); null when there is nothing to pay. */
  async function payOutHeld(task: TaskRecord, claimerAccountId: string): Promise<string | null> {
    const key = `task:${task.taskId}/payout`;
    const recorded = await findSubmission(sql, key);
    if (!recorded && (await books.escrowHeld(task.taskId, key)) <= 0n) return null;
    const price = BigInt(task.priceTinybars);
    const r = await books.escrowTransfer(task.taskId, key, 'payout', (held) => {
      const { claimerTinybars, feeTinybars } = payoutOf(held < price ? held : price, task.feeBps);
      return [
        { to: claimerAccountId, amountTinybars: claimerTinybars },
        { to: ledger.deployment.treasury, amountTinybars: feeTinybars },
      ];
    });
    return r.transactionId;
  }

  /** What the task's workflow would have done had it run on: pay a recorded completion, else give the escrow back. */
  async function settle(task: TaskRecord): Promise<StrandedSettlement> {
    const [payout, refund] = await Promise.all([findSubmission(sql, `task:${task.taskId}/payout`), findSubmission(sql, `task:${task.taskId}/refund`)]);
    const reviewDue = task.status === 'delivered' && task.escrow && task.escrowStatus === 'funded' && !!task.reviewEndsAt && Date.parse(task.reviewEndsAt) <= Date.now();
    const completionRecorded = (payout !== null && payout.status !== 'failed') || task.status === 'completed' || reviewDue;
    const claimer = task.claimerDid ? parseHederaDid(task.claimerDid)?.accountId : undefined;
    await deletePending(task);
    if (completionRecorded && claimer && (refund === null || refund.status === 'failed')) {
      const paymentTxId = await payOutHeld(task, claimer);
      if (paymentTxId) return { kind: 'paid', paymentTxId, refundTxId: await refundHeld(task) }; // a remainder above the price goes back
    }
    const refundTxId = await refundHeld(task);
    return refundTxId ? { kind: 'refunded', refundTxId } : { kind: 'cancelled' };
  }

  async function reconcileStrandedTask(input: { taskId: string; graceMs: number }): Promise<EscrowReconcileAction> {
    const { taskId } = input;
    const graceMs = graceOf(input.graceMs);
    const row = await findTask(sql, taskId);
    if (!row || !awaitsSettlement(row.record)) return { taskId, action: 'skipped', workflowStatus: 'NOT_FOUND', detail: row ? 'settled already' : 'no such task' };
    // the workflow again, now: running (reset, or between runs) or inside the grace, it is left alone
    const wf = await workflowOf(taskId);
    const closedFor = Date.now() - (wf.closedAt ?? row.updated_at.getTime());
    if (wf.status === 'RUNNING') return { taskId, action: 'skipped', workflowStatus: 'RUNNING' };
    if (closedFor < graceMs) return { taskId, action: 'skipped', workflowStatus: wf.status, detail: `closed ${Math.round(closedFor / 1000)} s ago, inside the grace` };
    try {
      const task = row.record;
      const settlement = await settle(task);
      const seq = await nextSeq(taskId, row.seq);
      const at = new Date().toISOString();
      const settled = settledTask(task, settlement, at);
      const reason = `escrow reconciler: its workflow is ${wf.status.toLowerCase().replace(/_/g, ' ')}`;
      const message: TaskMessage =
        settled.status === 'completed'
          ? { v: 1, type: 'task.completed', taskId, seq, status: settled.status, escrowStatus: settled.escrowStatus, at, claimerDid: settled.claimerDid, paymentTxId: settled.paymentTxId, reason }
          : { v: 1, type: 'task.cancelled', taskId, seq, status: settled.status, escrowStatus: settled.escrowStatus, at, refundTxId: settled.refundTxId, scheduleId: settled.scheduleId, reason };
      await market.publishTaskMessage({ idempotencyKey: `task:${taskId}/reconciled`, message });
      await upsertTask(sql, settled, seq);
      const action: EscrowReconcileAction =
        settlement.kind === 'paid'
          ? { taskId, action: 'paid', workflowStatus: wf.status, detail: settlement.paymentTxId }
          : settlement.kind === 'refunded'
            ? { taskId, action: 'refunded', workflowStatus: wf.status, detail: settlement.refundTxId }
            : { taskId, action: 'cancelled', workflowStatus: wf.status };
      log.warn(ESCROW_RECONCILED_LOG, { taskId, workflowStatus: wf.status, action: action.action, transactionId: action.detail ?? null, priceTinybars: task.priceTinybars, wasStatus: task.status, wasEscrowStatus: task.escrowStatus });
      return action;
    } catch (err) {
      log.error(ESCROW_UNRESOLVED_LOG, { taskId, workflowStatus: wf.status, error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
  }

  return { findStrandedTasks, reconcileStrandedTask };
}

export type EscrowReconcilerActivities = ReturnType<typeof createEscrowReconcilerActivities>;
