/**
 * directoryProbe: one pass of the directory's liveness probe (issue 29 item 6; DESIGN.md section 12
 * "Standard faces"), run by a Temporal Schedule (directory-probe:{taskQueue}; worker/directoryProbe.ts),
 * so each pass and what it found are visible in the Temporal UI.
 *
 * The pass reads the active entries not probed for `everyMs` (never probed first, then the longest
 * ago), at most `batch`, and probes each in its own activity, `concurrency` at a time: the agent card
 * (verified again) or else the endpoint, through the SSRF guard, and the entry's online, lastSeenAt,
 * stale and card verification written with the NOTIFY every directory write sends. A probe that fails
 * as an activity is counted and left for the next pass (its entry stays due).
 */
import { ActivityFailure, proxyActivities } from '@temporalio/workflow';
import type { DirectoryProbeActivities } from '../activities/web/directoryProbe.js';
import type { DirectoryProbeInput, DirectoryProbeResult, ProbeResult, ProbeTarget } from './contracts/directoryProbe.js';
import { RETRY_MAXIMUM_MS } from './activityOptions.js';

export async function directoryProbe(input: DirectoryProbeInput): Promise<DirectoryProbeResult> {
  const t = input.timings ?? {};
  const acts = proxyActivities<DirectoryProbeActivities>({
    // a probe makes at most two guarded fetches of 5 s each
    startToCloseTimeout: t.activityTimeoutMs ?? 60_000,
    retry: { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2, maximumAttempts: 3 },
  });
  const due = await acts.listProbeDue({ everyMs: input.everyMs, batch: input.batch });
  const concurrency = Math.max(1, input.concurrency ?? 8);
  const results: ProbeResult[] = [];
  let failed = 0;
  const probe = async (target: ProbeTarget) => {
    try {
      results.push(await acts.probeAgent(target));
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      failed++;
    }
  };
  for (let i = 0; i < due.length; i += concurrency) {
    await Promise.all(due.slice(i, i + concurrency).map(probe));
  }
  const online = results.filter((r) => r.online).length;
  return { checked: due.length, online, offline: results.length - online, failed };
}
