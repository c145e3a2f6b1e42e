/**
 * The interface of the taskLifecycle workflow (id task:{taskId}), shared by the workflow, the
 * marketplace routes (api/routes/market/) and the verifier activity:
 *
 *   input       TaskLifecycleInput: the task as posted, fee, escrow mode and timings (tests use seconds)
 *   Updates     sync, fund, claim, deliver, verify, complete, cancel, increaseReward (each returns the
 *               task record after the step; validators refuse wrong statuses and callers with a
 *               TaskRefusalFailure, see below)
 *   query       state -> TaskRecord
 *   activity    runTaskVerifier (activities/web/taskVerifier.ts) -> { passed, reasons }
 *
 * Only signed bytes and ids ever cross into the workflow, never a key: a key sent in a request body
 * signs inside the API process (a ScheduleSign for escrow, a CryptoTransfer without escrow) and the
 * base64 signed transaction bytes are what the Update carries.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { TaskRecord, TaskRefusal, VerifierType } from '../domain/market.js';

export function taskWorkflowId(taskId: string): string {
  return `task:${taskId}`;
}

export const TASK_WORKFLOW_TYPE = 'taskLifecycle';

/** Timings (milliseconds) so tests can run renewal and deadlines in seconds. */
export interface TaskTimings {
  /** explicit lifetime of each escrow schedule (default 30 min, the ledger's default) */
  scheduleLifetimeMs?: number;
  /** renew a pending schedule this long before it expires (default 5 min) */
  renewLeadMs?: number;
  /** renewals of one pending schedule before it is left to expire (default unlimited) */
  maxRenewals?: number;
  retryInitialMs?: number;
  retryMaximumMs?: number;
  activityTimeoutMs?: number;
  ledgerMaxAttempts?: number;
  /** continue-as-new once the history has this many events (tests); the server's suggestion always counts */
  continueAsNewAfterEvents?: number;
}

export interface TaskLifecycleInput {
  /** the task as posted (status posted, escrowStatus none, no schedule yet) */
  task: TaskRecord;
  /** the escrow account, the treasury (fee) and the marketplace topic are read from the deployment by the activities */
  timings?: TaskTimings;
  /** carried over by continue-as-new: the state and the step counter */
  carried?: {
    task: TaskRecord;
    seq: number;
    renewals: number;
    scheduleExpiresAt: string | null;
    topUpExpiresAt?: string | null;
    topUpRenewals?: number;
    ops?: number;
  };
}

// ------------------------------------------------------------------ Update arguments

/** A poster-signed ScheduleSign of one pending escrow schedule (payer: the service's operator). */
export interface ScheduleSignBytes {
  scheduleId: string;
  /** base64 of the signed, frozen ScheduleSignTransaction */
  signedBytes: string;
}

export interface FundArgs {
  posterDid: string;
  /** ScheduleSign for the pending funding schedule (and the top-up schedule when there is one) */
  scheduleSigns: ScheduleSignBytes[];
}

export interface ClaimArgs {
  claimerDid: string;
}

export interface DeliverArgs {
  claimerDid: string;
  resultBody?: string;
  resultIpfs?: string;
  /** sha256 hex of resultBody (computed by the API) */
  resultSha256?: string;
}

export interface VerifyArgs {
  /** the DID asking (informational; verify is open to the parties) */
  callerDid?: string;
}

export interface CompleteArgs {
  posterDid: string;
  /** with escrow still `scheduled` (or a pending top-up): the poster's ScheduleSign of each pending schedule */
  scheduleSigns?: ScheduleSignBytes[];
  /**
   * without escrow: the poster-signed CryptoTransfer (base64), already checked by the API to move
   * exactly price - fee to the claimer and the fee to the treasury; the workflow submits it
   */
  directTransferBytes?: string;
}

export interface CancelArgs {
  posterDid: string;
  reason?: string;
}

export interface IncreaseRewardArgs {
  posterDid: string;
  newPriceHbar: number;
}

export interface VerifyResult {
  passed: boolean;
  reasons: string[];
  verificationAttempts: number;
  task: TaskRecord;
}

// ------------------------------------------------------------------ definitions

/** Waits for the step in progress (posting creates the schedule) and returns the task. */
export const syncUpdate = defineUpdate<TaskRecord, []>('sync');
export const fundUpdate = defineUpdate<TaskRecord, [FundArgs]>('fund');
export const claimUpdate = defineUpdate<TaskRecord, [ClaimArgs]>('claim');
export const deliverUpdate = defineUpdate<TaskRecord, [DeliverArgs]>('deliver');
export const verifyUpdate = defineUpdate<VerifyResult, [VerifyArgs]>('verify');
export const completeUpdate = defineUpdate<TaskRecord, [CompleteArgs]>('complete');
export const cancelUpdate = defineUpdate<TaskRecord, [CancelArgs]>('cancel');
export const increaseRewardUpdate = defineUpdate<TaskRecord, [IncreaseRewardArgs]>('increaseReward');
export const taskStateQuery = defineQuery<TaskRecord>('state');

/**
 * Refusals (validator or handler): an ApplicationFailure with type TASK_REFUSAL_TYPE, nonRetryable,
 * whose first detail is the TaskRefusal (code, HTTP status, message, hint). Ledger refusals met
 * during a step (e.g. the poster's balance does not cover the escrow) come the same way with
 * status 400. The API maps them with api/routes/market/updates.ts.
 */
export const TASK_REFUSAL_TYPE = 'TaskRefusal';
export type { TaskRefusal };

// ------------------------------------------------------------------ the verifier activity (part 2)

export interface TaskVerifierInput {
  taskId: string;
  verifierType: VerifierType;
  verifierConfig: Record<string, unknown> | null;
  resultBody: string | null;
  resultIpfs: string | null;
  resultSha256: string | null;
  /** attempt number (1-based) */
  attempt: number;
}

export interface TaskVerifierResult {
  passed: boolean;
  reasons: string[];
}

/** Implemented in activities/web/taskVerifier.ts; proxied by the workflow. */
export interface TaskVerifierActivities {
  runTaskVerifier(input: TaskVerifierInput): Promise<TaskVerifierResult>;
}
