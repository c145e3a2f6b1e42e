/**
 * The worker's Temporal Schedules (the payment reconciler, worker/paymentReconciler.ts; the escrow
 * reconciler, worker/escrowReconciler.ts): each is created idempotently by every worker at start-up
 * (a second worker finds it and brings its spec up to date), one per task queue, running one pass
 * every interval; overlapping passes are skipped, and a pass nobody runs (no worker) times out.
 */
import { ScheduleAlreadyRunning, ScheduleNotFoundError, ScheduleOverlapPolicy, type Client, type ScheduleOptionsStartWorkflowAction, type ScheduleSpec } from '@temporalio/client';
import type { Config } from '../config/index.js';
import type { Workflow } from '@temporalio/common';

/** Creates the schedule running `action` every `everyMs`, or updates an existing one to them; returns its id. */
export async function ensureIntervalSchedule(client: Client, scheduleId: string, everyMs: number, action: ScheduleOptionsStartWorkflowAction<Workflow>): Promise<string> {
  const spec: ScheduleSpec = { intervals: [{ every: everyMs }] };
  const policies = { overlap: ScheduleOverlapPolicy.SKIP, catchupWindow: everyMs };
  try {
    await client.schedule.create({ scheduleId, spec, action, policies });
  } catch (err) {
    if (!(err instanceof ScheduleAlreadyRunning)) throw err;
    await client.schedule.getHandle(scheduleId).update((prev) => ({ ...prev, spec, action, policies: { ...prev.policies, ...policies } }));
  }
  return scheduleId;
}

/** Deletes a schedule (tests, at the end of a file or a chaos run); a missing one is fine. */
export async function deleteSchedule(client: Client, scheduleId: string): Promise<void> {
  try {
    await client.schedule.getHandle(scheduleId).delete();
  } catch (err) {
    if (!(err instanceof ScheduleNotFoundError)) throw err;
  }
}

/**
 * Worker start-up: connects a client, runs `ensure` (which returns the line to log), closes the
 * client. Never throws (logs instead) and retries a few times, so a Temporal hiccup at start-up does
 * not stop the worker.
 */
export function ensureAtStartup(config: Config, what: string, ensure: (client: Client) => Promise<string>, log: (line: string) => void = (l) => console.log(l)): void {
  void (async () => {
    const { createTemporalClient } = await import('../temporal/client.js');
    for (let attempt = 1; ; attempt++) {
      try {
        const client = await createTemporalClient(config);
        try {
          log(await ensure(client));
          return;
        } finally {
          await client.connection.close();
        }
      } catch (err) {
        if (attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 2_000 * attempt));
      }
    }
  })().catch((err: unknown) => log(`${what} not scheduled: ${err instanceof Error ? err.message : String(err)}`));
}
