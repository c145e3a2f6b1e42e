/**
 * The escrow reconciler's Temporal Schedule (issue 26 item 4): every ESCROW_RECONCILE_EVERY_S it
 * starts an escrowReconciler pass (workflows/escrowReconciler.ts) on this worker's task queue, which
 * settles the marketplace tasks whose taskLifecycle workflow has been closed (or unknown to Temporal)
 * for longer than ESCROW_RECONCILE_GRACE_S: a recorded completion is paid to the claimer, anything
 * else the escrow holds goes back to the poster, pending schedules are deleted. The schedule and its
 * passes are in the Temporal UI (Schedules: escrow-reconciler:{taskQueue}).
 *
 * Created idempotently by every worker at start-up, beside the payment reconciler
 * (worker/paymentReconciler.ts): a second worker finds it and brings its spec up to date. One schedule
 * per task queue. A pass that finds no worker times out instead of piling up; overlapping passes are
 * skipped.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { scheduleStartAction } from '../temporal/workflows.js';
import { escrowReconcilerContract, escrowReconcilerScheduleId, type EscrowReconcilerInput } from '../workflows/contracts/escrowReconciler.js';
import { deleteSchedule, ensureAtStartup, ensureIntervalSchedule } from './schedules.js';

export interface EscrowReconcilerOptions {
  taskQueue: string;
  /** ESCROW_RECONCILE_EVERY_S, in ms */
  everyMs: number;
  /** ESCROW_RECONCILE_GRACE_S, in ms */
  graceMs: number;
  /** ESCROW_RECONCILE_MAX */
  limit?: number;
  /** ESCROW_RECONCILE_SAMPLE */
  sample?: number;
  timings?: EscrowReconcilerInput['timings'];
}

/** Creates the schedule, or updates an existing one to these options; returns its id. */
export async function ensureEscrowReconciler(client: Client, o: EscrowReconcilerOptions): Promise<string> {
  const scheduleId = escrowReconcilerScheduleId(o.taskQueue);
  const input: EscrowReconcilerInput = {
    graceMs: o.graceMs,
    ...(o.limit !== undefined ? { limit: o.limit } : {}),
    ...(o.sample !== undefined ? { sample: o.sample } : {}),
    ...(o.timings ? { timings: o.timings } : {}),
  };
  const action = scheduleStartAction(escrowReconcilerContract, input, {
    workflowId: scheduleId,
    taskQueue: o.taskQueue,
    // a pass nobody runs (no worker) ends instead of blocking the next ones
    workflowRunTimeout: Math.max(10 * 60_000, 2 * o.everyMs),
    staticSummary: `Settles the escrow of tasks whose workflow has been closed for ${Math.round(o.graceMs / 1000)} s: a recorded completion is paid, the rest refunded`,
  });
  return ensureIntervalSchedule(client, scheduleId, o.everyMs, action);
}

/** Deletes the schedule (tests, at the end of a file); a missing one is fine. */
export async function deleteEscrowReconciler(client: Client, taskQueue: string): Promise<void> {
  await deleteSchedule(client, escrowReconcilerScheduleId(taskQueue));
}

/** Worker start-up: ensures the schedule (worker/schedules.ts ensureAtStartup: never throws, retries a few times). */
export function startEscrowReconcilerOnce(config: Config, log?: (line: string) => void): void {
  ensureAtStartup(
    config,
    'escrow reconciler',
    async (client) => {
      const id = await ensureEscrowReconciler(client, {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        everyMs: config.ESCROW_RECONCILE_EVERY_S * 1000,
        graceMs: config.ESCROW_RECONCILE_GRACE_S * 1000,
        limit: config.ESCROW_RECONCILE_MAX,
        sample: config.ESCROW_RECONCILE_SAMPLE,
      });
      return `escrow reconciler scheduled: ${id} (every ${config.ESCROW_RECONCILE_EVERY_S} s, workflows closed for ${config.ESCROW_RECONCILE_GRACE_S} s)`;
    },
    log,
  );
}
