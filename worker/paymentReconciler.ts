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
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleSpec } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { scheduleStartAction } from '../temporal/workflows.js';
import type { PassportWorkflowTimings } from '../workflows/contracts/passport.js';
import { paymentReconcilerContract, paymentReconcilerScheduleId, type PaymentReconcilerInput } from '../workflows/contracts/paymentReconciler.js';

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
  const spec: ScheduleSpec = { intervals: [{ every: o.everyMs }] };
  const action = scheduleStartAction(paymentReconcilerContract, input, {
    workflowId: scheduleId,
    taskQueue: o.taskQueue,
    // a pass nobody runs (no worker) ends instead of blocking the next ones
    workflowRunTimeout: Math.max(10 * 60_000, 4 * o.everyMs),
    staticSummary: `Settles x402 payments without a passport or a refund ${Math.round(o.afterMs / 1000)} s after they were recorded`,
  });
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: o.everyMs };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((prev) => ({ ...prev, spec, action, policies: { ...prev.policies, ...policies } }));
  }
  return scheduleId;
}

/** Deletes the schedule (tests, at the end of a file or a chaos run); a missing one is fine. */
export async function deletePaymentReconciler(client: Client, taskQueue: string): Promise<void> {
  try {
    await client.schedule.getHandle(paymentReconcilerScheduleId(taskQueue)).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}

/**
 * Worker start-up helper: connects a client, ensures the schedule, closes the client. Never throws
 * (logs instead) and retries a few times, so a Temporal hiccup at start-up does not stop the worker.
 */
export function startPaymentReconcilerOnce(config: Config, log: (line: string) => void = (l) => console.log(l)): void {
  void (async () => {
    const { createTemporalClient } = await import('../temporal/client.js');
    for (let attempt = 1; ; attempt++) {
      try {
        const client = await createTemporalClient(config);
        try {
          const id = await ensurePaymentReconciler(client, {
            taskQueue: config.TEMPORAL_TASK_QUEUE,
            afterMs: config.PAYMENT_RECONCILE_AFTER_MS,
            everyMs: config.PAYMENT_RECONCILE_EVERY_MS,
            ...(config.WORKFLOW_ID_SCOPE ? { workflowIdScope: config.WORKFLOW_ID_SCOPE } : {}),
          });
          log(`payment reconciler scheduled: ${id} (every ${config.PAYMENT_RECONCILE_EVERY_MS} ms, payments older than ${config.PAYMENT_RECONCILE_AFTER_MS} ms)`);
          return;
        } finally {
          await client.connection.close();
        }
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 2_000 * attempt));
      }
    }
  })().catch((err: unknown) => log(`payment reconciler not scheduled: ${err instanceof Error ? err.message : String(err)}`));
}
