/**
 * The payment reconciler's Temporal Schedule (issue 23): every PAYMENT_RECONCILE_EVERY_MS it starts a
 * paymentReconciler pass (workflows/paymentReconciler.ts) on this worker's task queue, which settles
 * every payment still without an outcome PAYMENT_RECONCILE_AFTER_MS after it was recorded. The
 * schedule, its passes and the child workflows they start are all in the Temporal UI (Schedules:
 * payment-reconciler:{taskQueue}).
 *
 * Created idempotently by every worker at start-up (a second worker finds it and brings its spec up
 * to date). One schedule per task queue: test files and chaos runs on their own queues never share one.
 * A pass that finds no worker times out (workflowRunTimeout) instead of piling up; overlapping passes
 * are skipped.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { scheduleStartAction } from '../temporal/workflows.js';
import type { PassportWorkflowTimings } from '../workflows/contracts/passport.js';
import { paymentReconcilerContract, paymentReconcilerScheduleId, type PaymentReconcilerInput } from '../workflows/contracts/paymentReconciler.js';
import { deleteSchedule, ensureAtStartup, ensureIntervalSchedule } from './schedules.js';

export interface PaymentReconcilerOptions {
  taskQueue: string;
  /** PAYMENT_RECONCILE_AFTER_MS */
  afterMs: number;
  /** PAYMENT_RECONCILE_EVERY_MS */
  everyMs: number;
  /** prefix of the workflow ids the passes start (tests) */
  workflowIdScope?: string;
  timings?: PassportWorkflowTimings;
}

/** Creates the schedule, or updates an existing one to these options; returns its id. */
export async function ensurePaymentReconciler(client: Client, o: PaymentReconcilerOptions): Promise<string> {
  const scheduleId = paymentReconcilerScheduleId(o.taskQueue);
  const input: PaymentReconcilerInput = {
    olderThanMs: o.afterMs,
    ...(o.workflowIdScope ? { workflowIdScope: o.workflowIdScope } : {}),
    ...(o.timings ? { timings: o.timings } : {}),
  };
  const action = scheduleStartAction(paymentReconcilerContract, input, {
    workflowId: scheduleId,
    taskQueue: o.taskQueue,
    // a pass nobody runs (no worker) ends instead of blocking the next ones
    workflowRunTimeout: Math.max(10 * 60_000, 4 * o.everyMs),
    staticSummary: `Settles x402 payments without a passport or a refund ${Math.round(o.afterMs / 1000)} s after they were recorded`,
  });
  return ensureIntervalSchedule(client, scheduleId, o.everyMs, action);
}

/** Deletes the schedule (tests, at the end of a file or a chaos run); a missing one is fine. */
export async function deletePaymentReconciler(client: Client, taskQueue: string): Promise<void> {
  await deleteSchedule(client, paymentReconcilerScheduleId(taskQueue));
}

/** Worker start-up: ensures the schedule (worker/schedules.ts ensureAtStartup: never throws, retries a few times). */
export function startPaymentReconcilerOnce(config: Config, log?: (line: string) => void): void {
  ensureAtStartup(
    config,
    'payment reconciler',
    async (client) => {
      const id = await ensurePaymentReconciler(client, {
        taskQueue: config.TEMPORAL_TASK_QUEUE,
        afterMs: config.PAYMENT_RECONCILE_AFTER_MS,
        everyMs: config.PAYMENT_RECONCILE_EVERY_MS,
        ...(config.WORKFLOW_ID_SCOPE ? { workflowIdScope: config.WORKFLOW_ID_SCOPE } : {}),
      });
      return `payment reconciler scheduled: ${id} (every ${config.PAYMENT_RECONCILE_EVERY_MS} ms, payments older than ${config.PAYMENT_RECONCILE_AFTER_MS} ms)`;
    },
    log,
  );
}
