/**
 * Contract of directoryProbe (workflows/directoryProbe.ts; issue 29 item 6): one pass of the
 * directory's liveness probe, started by the Temporal Schedule directory-probe:{taskQueue} that every
 * worker ensures (worker/directoryProbe.ts); its runs take the schedule's id as their id prefix.
 * Scheduled, so unbound (workflows/contracts/binding.ts): the input carries no authority, and the
 * activities hold it to the worker's own configuration.
 */
import { workflowContract } from './contract.js';

/** The probe's schedule (and the prefix of its runs' ids): one per task queue. */
export function directoryProbeScheduleId(taskQueue: string): string {
  return `directory-probe:${taskQueue}`;
}

export interface DirectoryProbeInput {
  /** an entry probed less than this ago is not probed again (DIRECTORY_PROBE_EVERY_S, in ms) */
  everyMs: number;
  /** entries probed per pass at most (DIRECTORY_PROBE_BATCH); the rest wait for the next pass */
  batch: number;
  /** probes run at once (default 8) */
  concurrency?: number;
  timings?: { activityTimeoutMs?: number; retryInitialMs?: number; retryMaximumMs?: number };
}

/** An active directory entry due for a probe. */
export interface ProbeTarget {
  did: string;
  accountId: string;
  endpoint: string;
  agentCard?: string;
}

/**
 * What one probe found: `card` the agent card answered 2xx (and was verified again), `endpoint` the
 * endpoint answered (any status below 500), `offline` neither answered.
 */
export const PROBE_OUTCOMES = ['card', 'endpoint', 'offline'] as const;
export type ProbeOutcome = (typeof PROBE_OUTCOMES)[number];

export interface ProbeResult {
  did: string;
  outcome: ProbeOutcome;
  online: boolean;
  /** set when the card was fetched and checked again */
  cardVerified?: boolean;
  cardVerification?: string;
}

export interface DirectoryProbeResult {
  checked: number;
  online: number;
  offline: number;
  /** probes that failed as activities (PostgreSQL down, ...): tried again next pass */
  failed: number;
}

export const directoryProbeContract = workflowContract<DirectoryProbeInput, DirectoryProbeResult>()({
  type: 'directoryProbe',
  workflowId: directoryProbeScheduleId,
});
