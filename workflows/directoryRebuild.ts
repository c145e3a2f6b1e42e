/**
 * directoryRebuild (id directory-rebuild), started by POST /admin/rebuild-cache: replays the
 * directory topic from sequence 1 into the projection, which announces a full reload to every API
 * process (NOTIFY agent_changed '*'). One activity does the read and the write, so the messages
 * never pass through workflow history; it heartbeats while it pages through the mirror. A second
 * request while one runs attaches to this workflow (same id).
 */
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { DirectoryLedgerActivities } from '../activities/ledger/directory.js';
import type { DirectoryRebuildInput, DirectoryRebuildResult } from './contracts/directoryRebuild.js';
import { HEARTBEAT_TIMEOUT_MS, RETRY_MAXIMUM_MS } from './activityOptions.js';
import { requireBoundStart } from './binding.js';

export async function directoryRebuild(input: DirectoryRebuildInput = {}): Promise<DirectoryRebuildResult> {
  requireBoundStart(input, 'directoryRebuild'); // an input written for another workflow starts nothing (issue 26)
  const t = input.timings ?? {};
  const { rebuildDirectoryProjection } = proxyActivities<DirectoryLedgerActivities>({
    startToCloseTimeout: Math.max(t.activityTimeoutMs ?? 0, 600_000),
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, // progress heartbeats per page and the keep-alive (worker/keepAlive.ts)
    retry: { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2, maximumAttempts: 5 },
  });
  const startedAt = Date.now();
  setCurrentDetails('Replaying the directory topic from sequence 1 into the projection');
  const counts = await rebuildDirectoryProjection();
  const finishedAt = Date.now();
  setCurrentDetails(`Rebuilt: ${counts.agents} agents (${counts.active} active) from ${counts.messages} messages, ${counts.skipped} skipped`);
  return { status: 'rebuilt', ...counts, startedAt, finishedAt };
}
