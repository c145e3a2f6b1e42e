/**
 * The directory liveness probe's Temporal Schedule (issue 29 item 6): every min(DIRECTORY_PROBE_EVERY_S,
 * 300) s it starts a directoryProbe pass (workflows/directoryProbe.ts) on this worker's task queue,
 * which probes at most DIRECTORY_PROBE_BATCH active entries not probed for DIRECTORY_PROBE_EVERY_S
 * (their A2A card, verified again, or their endpoint, through the SSRF guard). The schedule and its
 * passes are in the Temporal UI (Schedules: directory-probe:{taskQueue}).
 *
 * Created idempotently by every worker at start-up, beside the reconcilers (worker/schedules.ts): one
 * per task queue, overlapping passes skipped, a pass nobody runs times out.
 */
import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { scheduleStartAction } from '../temporal/workflows.js';
import { directoryProbeContract, directoryProbeScheduleId, type DirectoryProbeInput } from '../workflows/contracts/directoryProbe.js';
import { deleteSchedule, ensureAtStartup, ensureIntervalSchedule } from './schedules.js';

/** Passes run at least this often, so an entry is probed soon after it falls due (a pass probes only due entries). */
export const PROBE_PASS_MAX_INTERVAL_MS = 300_000;

export interface DirectoryProbeOptions {
  taskQueue: string;
  /** DIRECTORY_PROBE_EVERY_S, in ms */
  everyMs: number;
  /** DIRECTORY_PROBE_BATCH */
  batch: number;
  /** how often a pass runs (default min(everyMs, 300 s)) */
  passEveryMs?: number;
  timings?: DirectoryProbeInput['timings'];
}

/** Creates the schedule, or updates an existing one to these options; returns its id. */
export async function ensureDirectoryProbe(client: Client, o: DirectoryProbeOptions): Promise<string> {
  const scheduleId = directoryProbeScheduleId(o.taskQueue);
  const passEveryMs = o.passEveryMs ?? Math.min(o.everyMs, PROBE_PASS_MAX_INTERVAL_MS);
  const input: DirectoryProbeInput = { everyMs: o.everyMs, batch: o.batch, ...(o.timings ? { timings: o.timings } : {}) };
  const action = scheduleStartAction(directoryProbeContract, input, {
    workflowId: scheduleId,
    taskQueue: o.taskQueue,
    workflowRunTimeout: Math.max(10 * 60_000, 2 * passEveryMs),
    staticSummary: `Probes up to ${o.batch} directory entries not probed for ${Math.round(o.everyMs / 1000)} s: agent card (verified again) or endpoint`,
  });
  return ensureIntervalSchedule(client, scheduleId, passEveryMs, action);
}

/** Deletes the schedule (tests, at the end of a file); a missing one is fine. */
export async function deleteDirectoryProbe(client: Client, taskQueue: string): Promise<void> {
  await deleteSchedule(client, directoryProbeScheduleId(taskQueue));
}

/** Worker start-up: ensures the schedule (worker/schedules.ts ensureAtStartup: never throws, retries a few times). */
export function startDirectoryProbeOnce(config: Config, log?: (line: string) => void): void {
  ensureAtStartup(
    config,
    'directory probe',
    async (client) => {
      const everyMs = config.DIRECTORY_PROBE_EVERY_S * 1000;
      const id = await ensureDirectoryProbe(client, { taskQueue: config.TEMPORAL_TASK_QUEUE, everyMs, batch: config.DIRECTORY_PROBE_BATCH });
      return `directory probe scheduled: ${id} (entries every ${config.DIRECTORY_PROBE_EVERY_S} s, ${config.DIRECTORY_PROBE_BATCH} per pass, a pass every ${Math.min(everyMs, PROBE_PASS_MAX_INTERVAL_MS) / 1000} s)`;
    },
    log,
  );
}
