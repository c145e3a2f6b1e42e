/**
 * Contract of the taskLifecycle workflow (workflows/taskLifecycle.ts; id task:{taskId}), shared by
 * the workflow, the marketplace (api/market/, its routes api/routes/market/) and the verifier
 * activity (was workflows/taskTypes.ts):
 *
 *   input       TaskLifecycleInput: the task as posted, fee, escrow mode and timings (tests use seconds)
 *   Updates     sync, fund, claim, deliver, verify, complete, cancel, increaseReward (each returns the
 *               task record after the step; validators refuse wrong statuses and callers with a
 *               TaskRefusalFailure, see below)
 *   query       state -> TaskRecord
 *   activity    runTaskVerifier (activities/web/marketVerifier.ts) -> { passed, reasons }
 *
 * Only signed bytes and ids ever cross into the workflow, never a key: a key sent in a request body
 * signs inside the API process (a ScheduleSign for escrow, a CryptoTransfer without escrow) and the
 * base64 signed transaction bytes are what the Update carries.
 */
import { defineQuery, defineUpdate } from '@temporalio/workflow';
import type { TaskRecord, TaskRefusal, VerifierType } from '../../domain/market.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

export function taskWorkflowId(taskId: string): string {
  return `task:${taskId}`;
}

/** Timings (milliseconds) so tests can run renewal and deadlines in seconds. */
export interface TaskTimings {
  /** explicit lifetime of each escrow schedule (default 30 min, the ledger's default) */
  scheduleLifetimeMs?: number;
  /** renew a pending schedule this long before it expires (default 5 min) */
  renewLeadMs?: number;
  /** renewals of one pending schedule before it is left to expire (default: as many as the task's funding window holds) */
  maxRenewals?: number;
  /** verifier runs per delivery when runs are inconclusive (default 5; the API passes MARKET_VERIFY_RUNS_MAX) */
  verifyRunsMax?: number;
  /** pause before an inconclusive verification may run again (default 300 s; the API passes MARKET_VERIFY_RETRY_S) */
  verifyRetryMs?: number;
  /** increase-reward steps per task (default 5; the API passes MARKET_REWARD_INCREASES_MAX) */
  rewardIncreasesMax?: number;
  retryInitialMs?: number;
  retryMaximumMs?: number;
  activityTimeoutMs?: number;
  ledgerMaxAttempts?: number;
  /** continue-as-new once the history has this many events (tests); the server's suggestion always counts */
  continueAsNewAfterEvents?: number;
}

/**
 * The service's ledger facts the Update validators check client bytes against (issue 19): the
 * operator pays for the poster's ScheduleSign, the treasury gets a direct payment's fee, and client
 * transactions are frozen for one of these nodes. Set by the API at posting; absent in workflows
 * started before (their validators then check what the task alone tells; the activities check all).
 */
export interface TaskLedgerFacts {
  operator: string;
  treasury: string;
  nodeAccountIds: string[];
}

export interface TaskLifecycleInput extends Bound {
  /** the task as posted (status posted, escrowStatus none, no schedule yet) */
  task: TaskRecord;
  /** the service's accounts and nodes, for the validators' checks of client bytes */
  ledger?: TaskLedgerFacts;
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
    /** the newest Update nonces seen (workflows/binding.ts) */
    nonces?: string[];
  };
}

// ------------------------------------------------------------------ Update arguments

/**
 * A poster-signed ScheduleSign of one pending escrow schedule (payer: the service's operator).
 * Checked by the Update's validator and by the activity before the operator signs it (issue 19).
 */
export interface ScheduleSignBytes {
  scheduleId: string;
  /** base64 of the signed, frozen ScheduleSignTransaction */
  signedBytes: string;
}

export interface FundArgs extends Bound {
  posterDid: string;
  /** ScheduleSign for the pending funding schedule (and the top-up schedule when there is one) */
  scheduleSigns: ScheduleSignBytes[];
}

export interface ClaimArgs extends Bound {
  claimerDid: string;
}

export interface DeliverArgs extends Bound {
  claimerDid: string;
  resultBody?: string;
  resultIpfs?: string;
  /** sha256 hex of resultBody (computed by the API) */
  resultSha256?: string;
}

export interface VerifyArgs extends Bound {
  /** the DID asking (informational; verify is open to the parties) */
  callerDid?: string;
}

export interface CompleteArgs extends Bound {
  posterDid: string;
  /** with escrow still `scheduled` (or a pending top-up): the poster's ScheduleSign of each pending schedule */
  scheduleSigns?: ScheduleSignBytes[];
  /**
   * without escrow: the poster-signed CryptoTransfer (base64), checked by the API to move exactly
   * price - fee to the claimer and the fee to the treasury, and again by the Update's validator
   * (structure) and the activity that submits it (structure, the poster's signature, validity)
   */
  directTransferBytes?: string;
}

export interface CancelArgs extends Bound {
  posterDid: string;
  reason?: string;
}

export interface IncreaseRewardArgs extends Bound {
  posterDid: string;
  newPriceHbar: number;
}

export interface VerifyResult {
  passed: boolean;
  reasons: string[];
  verificationAttempts: number;
  task: TaskRecord;
  /** when the outcome was found (escrow promises: a later verify of the same delivery answers it again) */
  verifiedAt?: string;
  /** true when this answer reuses the delivery's kept outcome (no verifier ran) */
  reused?: boolean;
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
 * status 400. The API maps them with api/market/updates.ts.
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
  /** no verdict (an http verifier unreachable or not answering { passed }): the outcome may be found again later */
  inconclusive?: boolean;
}

/** Implemented in activities/web/marketVerifier.ts; proxied by the workflow. */
export interface TaskVerifierActivities {
  runTaskVerifier(input: TaskVerifierInput): Promise<TaskVerifierResult>;
}

// ------------------------------------------------------------------ the contract

export const taskLifecycleContract = workflowContract<TaskLifecycleInput, TaskRecord>()({
  type: 'taskLifecycle',
  workflowId: taskWorkflowId,
  updates: {
    sync: syncUpdate,
    fund: fundUpdate,
    claim: claimUpdate,
    deliver: deliverUpdate,
    verify: verifyUpdate,
    complete: completeUpdate,
    cancel: cancelUpdate,
    increaseReward: increaseRewardUpdate,
  },
  queries: { state: taskStateQuery },
});
