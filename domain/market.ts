/**
 * The task marketplace's rules (SPEC 2 "Task", 3 "Marketplace task", 4.4a, 8; DESIGN.md sections 6
 * "Marketplace escrow" and 10 "Marketplace"): the task record, the state machine with the SPEC's
 * statuses for an operation in a wrong status, fee math in integer tinybars, field limits and the
 * marketplace topic messages. Pure: used by the API (routes answer early), the taskLifecycle
 * workflow (its Update validators enforce the same table) and the tests.
 */

import type { ExpectedPayment } from './ledgerTransaction.js';

export const TASK_STATUSES = ['posted', 'claimed', 'delivered', 'completed', 'cancelled'] as const;
export type TaskStatus = (typeof TASK_STATUSES)[number];

export const ESCROW_STATUSES = ['none', 'scheduled', 'funded', 'released', 'refunded', 'cancelled', 'expired'] as const;
export type EscrowStatus = (typeof ESCROW_STATUSES)[number];

export const VERIFIER_TYPES = ['none', 'sha256', 'json_schema', 'http'] as const;
export type VerifierType = (typeof VERIFIER_TYPES)[number];

export const TASK_OPERATIONS = ['claim', 'deliver', 'verify', 'complete', 'cancel', 'increaseReward', 'preparePayment'] as const;
export type TaskOperation = (typeof TASK_OPERATIONS)[number];

// ------------------------------------------------------------------ limits

export const TITLE_MIN = 1;
export const TITLE_MAX = 200;
export const DESCRIPTION_MAX = 4000;
/** resultBody is at most 4 KB (SPEC 8): counted in UTF-8 bytes. */
export const RESULT_BODY_MAX_BYTES = 4096;
export const RESULT_IPFS_MAX = 512;
export const TASK_CAPABILITIES_MAX = 10;
export const TASK_CAPABILITY_MAX_LENGTH = 48;
/** A price is positive, at most 8 decimals (1 tinybar) and at most this many HBAR. */
export const PRICE_HBAR_MAX = 1_000_000;
export const TINYBARS_PER_HBAR = 100_000_000n;
/** GET /market/tasks pagination (DESIGN 6 "Limits"). */
export const TASK_LIST_DEFAULT_LIMIT = 20;
export const TASK_LIST_MAX_LIMIT = 100;

/** A result stored elsewhere: ipfs://<cid>[/path], or a bare CID (v0 Qm..., v1 b...). */
const IPFS_REF = /^(?:ipfs:\/\/)?(?:Qm[1-9A-HJ-NP-Za-km-z]{44}|b[a-z2-7]{20,100})(?:\/[A-Za-z0-9._~!$&'()*+,;=:@%/-]{0,400})?$/;

export function isResultIpfs(value: string): boolean {
  return value.length <= RESULT_IPFS_MAX && IPFS_REF.test(value);
}

export function utf8Bytes(s: string): number {
  // TextEncoder is available in Node and in the workflow sandbox
  return new TextEncoder().encode(s).length;
}

export function isResultBodyTooLarge(body: string): boolean {
  return utf8Bytes(body) > RESULT_BODY_MAX_BYTES;
}

// ------------------------------------------------------------------ money

/** HBAR (a JSON number with at most 8 decimals) to integer tinybars; null when not representable. */
export function hbarToTinybars(priceHbar: number): bigint | null {
  if (!Number.isFinite(priceHbar) || priceHbar <= 0 || priceHbar > PRICE_HBAR_MAX) return null;
  const fixed = priceHbar.toFixed(8);
  if (Number(fixed) !== priceHbar) return null; // more than 8 decimals
  const [whole, frac] = fixed.split('.');
  const t = BigInt(whole) * TINYBARS_PER_HBAR + BigInt(frac);
  return t > 0n ? t : null;
}

export function tinybarsToHbar(tinybars: bigint | string): number {
  const t = BigInt(tinybars);
  return Number(t / TINYBARS_PER_HBAR) + Number(t % TINYBARS_PER_HBAR) / 1e8;
}

/** The marketplace fee of a price: floor(price * bps / 10000) tinybars. */
export function marketFee(priceTinybars: bigint, feeBps: number): bigint {
  return (priceTinybars * BigInt(feeBps)) / 10_000n;
}

export interface Payout {
  /** to the claimer: price - fee */
  claimerTinybars: bigint;
  /** to the treasury */
  feeTinybars: bigint;
}

export function payoutOf(priceTinybars: bigint, feeBps: number): Payout {
  const feeTinybars = marketFee(priceTinybars, feeBps);
  return { claimerTinybars: priceTinybars - feeTinybars, feeTinybars };
}

/** The memo of a task's direct payment (prepare-payment sets it; the checks of the API, the workflow and the activity require it). */
export function paymentMemo(taskId: string): string {
  return `task ${taskId} payment`;
}

// ------------------------------------------------------------------ the task record

export interface TaskRecord {
  taskId: string;
  title: string;
  description: string;
  priceHbar: number;
  /** the price in tinybars, as a decimal string (exact) */
  priceTinybars: string;
  capabilities: string[];
  status: TaskStatus;
  posterDid: string;
  claimerDid: string | null;
  /** the escrow schedule (the funding schedule; replaced on renewal and on increase-reward) */
  scheduleId: string | null;
  /** a pending top-up schedule after increase-reward of a funded task */
  topUpScheduleId: string | null;
  escrowStatus: EscrowStatus;
  /** tinybars held by the escrow account for this task (funded schedules that executed) */
  escrowedTinybars: string;
  verificationAttempts: number;
  verifierType: VerifierType;
  verifierConfig: Record<string, unknown> | null;
  /** ISO time; at the deadline an unfinished task is cancelled and refunded */
  deadline: string | null;
  resultBody: string | null;
  resultIpfs: string | null;
  resultSha256: string | null;
  paymentTxId: string | null;
  /** refund transaction (cancel of a funded task) */
  refundTxId: string | null;
  /** the fee in basis points fixed at posting */
  feeBps: number;
  /** true when the price is held in escrow (scheduled transfers); false: the poster pays the claimer directly */
  escrow: boolean;
  createdAt: string;
  updatedAt: string;
  // Escrow promises (issue 19 item 7, issue 20 items 2 and 10; DESIGN 11). Optional: records written
  // before them have none, and their workflows keep the old timers (patched).
  /** seconds a claim may stay undelivered before it lapses back to posted (fixed at posting) */
  claimWindowSeconds?: number;
  /** while claimed: when the claim lapses without a delivery */
  claimEndsAt?: string | null;
  /** escrow tasks: seconds after delivery with no complete and no cancel before the escrow is released to the claimer */
  reviewWindowSeconds?: number | null;
  /** while delivered (escrow): when the escrow is released to the claimer if the poster neither completes nor cancels */
  reviewEndsAt?: string | null;
  /** escrow tasks: seconds after posting an unfunded escrow may stay unfunded before the task is cancelled */
  fundingWindowSeconds?: number | null;
  /** while the escrow is not funded: when the task is cancelled for want of funding */
  fundingEndsAt?: string | null;
  /** when the result was delivered */
  deliveredAt?: string | null;
  /** the outcome of the delivery's verifier, reused by later verifies of the same delivery */
  verification?: TaskVerification | null;
  /** increase-reward steps taken (each replaces a schedule at the operator's cost; bounded per task) */
  rewardIncreases?: number;
}

/** A delivery's verification as the task keeps it (POST /verify answers it again instead of running the verifier again). */
export interface TaskVerification {
  passed: boolean;
  reasons: string[];
  /** ISO time of the run */
  at: string;
  /** verifier runs on this delivery so far */
  runs: number;
  /** the verifier gave no verdict (unreachable, not a JSON answer): it may run again after a pause, a bounded number of times */
  inconclusive?: boolean;
}

/** Defaults of the escrow promises (config: MARKET_CLAIM_WINDOW_S, MARKET_REVIEW_WINDOW_S, MARKET_FUNDING_WINDOW_S). */
export const DEFAULT_CLAIM_WINDOW_S = 24 * 3600;
export const DEFAULT_REVIEW_WINDOW_S = 72 * 3600;
export const DEFAULT_FUNDING_WINDOW_S = 24 * 3600;
/** What a poster may choose per task for the claim and review windows (hours). */
export const TASK_WINDOW_MIN_HOURS = 1;
export const TASK_WINDOW_MAX_HOURS = 720;
/** Verifier reruns of an inconclusive outcome (config: MARKET_VERIFY_RUNS_MAX, MARKET_VERIFY_RETRY_S). */
export const DEFAULT_VERIFY_RUNS_MAX = 5;
export const DEFAULT_VERIFY_RETRY_S = 300;
/** increase-reward steps per task (config: MARKET_REWARD_INCREASES_MAX). */
export const DEFAULT_REWARD_INCREASES_MAX = 5;

/** The marketplace is for gold and platinum passports (SPEC 2 trust ladder, marketplace_participant): posting and claiming. */
export const MARKET_TIERS = ['gold', 'platinum'] as const;

export function isMarketTier(tier: string): boolean {
  return (MARKET_TIERS as readonly string[]).includes(tier);
}

/** The statuses of a task still open (the in-memory task book holds these only). */
export const OPEN_TASK_STATUSES = ['posted', 'claimed', 'delivered'] as const satisfies readonly TaskStatus[];

export function isOpenStatus(s: TaskStatus): boolean {
  return s === 'posted' || s === 'claimed' || s === 'delivered';
}

/** An escrow task whose poster has not put the price in escrow: its schedule waits for a signature, or expired. */
export function escrowUnfunded(task: Pick<TaskRecord, 'escrow' | 'escrowStatus'>): boolean {
  return task.escrow && (task.escrowStatus === 'scheduled' || task.escrowStatus === 'expired');
}

/** The posting step failed (the escrow schedule could not be created): the task ended cancelled and was never posted. */
export function refusedAtPosting(task: Pick<TaskRecord, 'status' | 'escrow' | 'escrowStatus' | 'scheduleId'>): boolean {
  return task.status === 'cancelled' && task.escrow && task.escrowStatus === 'none' && task.scheduleId === null;
}

/**
 * Who reads a delivered result (issue 26 item 3): until the task is completed (paid), only its poster
 * and its claimer; once completed, everyone (SPEC 5: task reads are open, and the work was paid for).
 * A cancelled task was never paid: its result stays with the parties. Everyone else sees resultSha256
 * and the status.
 */
export function resultVisibleTo(task: Pick<TaskRecord, 'status' | 'posterDid' | 'claimerDid'>, did: string | undefined): boolean {
  return task.status === 'completed' || (did !== undefined && (did === task.posterDid || did === task.claimerDid));
}

/** A marketplace topic message as published: the topic is public, so a delivered result's reference (resultIpfs) never goes there. */
export function publicTaskMessage(m: TaskMessage): TaskMessage {
  if (m.resultIpfs === undefined) return m;
  const { resultIpfs: _withheld, ...rest } = m;
  return rest;
}

/**
 * A task that still needs its workflow: open, or its escrow holding money or a pending schedule. When
 * the workflow is gone (closed or unknown to Temporal) the escrow reconciler settles it (issue 26 item 4).
 */
export function awaitsSettlement(task: Pick<TaskRecord, 'status' | 'escrowStatus' | 'topUpScheduleId'>): boolean {
  return isOpenStatus(task.status) || task.escrowStatus === 'scheduled' || task.escrowStatus === 'funded' || task.topUpScheduleId !== null;
}

/** How the escrow reconciler settled a stranded task: paid to the claimer (a recorded completion), refunded to the poster, or closed with nothing held. */
export type StrandedSettlement = { kind: 'paid'; paymentTxId: string; refundTxId: string | null } | { kind: 'refunded'; refundTxId: string } | { kind: 'cancelled' };

/**
 * The task after the escrow reconciler settled it (at `at`, ISO): completed and released when paid,
 * else cancelled with its escrow refunded, or cancelled (a schedule that never ran) and otherwise as it
 * was (none, expired). Nothing is held or pending any more, and no window runs.
 */
export function settledTask(task: TaskRecord, settlement: StrandedSettlement, at: string): TaskRecord {
  const ended: TaskRecord = { ...task, escrowedTinybars: '0', topUpScheduleId: null, claimEndsAt: null, reviewEndsAt: null, fundingEndsAt: null, updatedAt: at };
  if (settlement.kind === 'paid') {
    return { ...ended, status: 'completed', escrowStatus: 'released', paymentTxId: settlement.paymentTxId, refundTxId: settlement.refundTxId ?? task.refundTxId };
  }
  if (settlement.kind === 'refunded') return { ...ended, status: 'cancelled', escrowStatus: 'refunded', refundTxId: settlement.refundTxId };
  const escrowStatus: EscrowStatus = task.escrowStatus === 'scheduled' || task.escrowStatus === 'funded' ? 'cancelled' : task.escrowStatus;
  return { ...ended, status: task.status === 'completed' ? 'completed' : 'cancelled', escrowStatus };
}

/** A result was delivered (a delivery always leaves resultBody or resultIpfs). */
export function wasDelivered(task: Pick<TaskRecord, 'resultBody' | 'resultIpfs'>): boolean {
  return task.resultBody !== null || task.resultIpfs !== null;
}

/**
 * Whether a verify of this delivery runs the verifier again: only when the kept outcome was
 * inconclusive, fewer than `runsMax` runs were made and `retryMs` passed since the last one.
 */
export function verifierRunDue(v: TaskVerification | null | undefined, now: number, runsMax: number, retryMs: number): boolean {
  if (!v) return true;
  return v.inconclusive === true && v.runs < runsMax && now - Date.parse(v.at) >= retryMs;
}

/** What the poster decides when posting; everything else of a new task starts empty. */
export type PostedTaskFields = Pick<
  TaskRecord,
  'taskId' | 'title' | 'description' | 'priceHbar' | 'priceTinybars' | 'capabilities' | 'posterDid' | 'verifierType' | 'verifierConfig' | 'deadline' | 'feeBps' | 'escrow'
> &
  Partial<Pick<TaskRecord, 'claimWindowSeconds' | 'reviewWindowSeconds' | 'fundingWindowSeconds'>>;

/** A task as posted at `at` (ISO time): status posted, no claimer, no escrow yet, no result, no payment. */
export function postedTask(fields: PostedTaskFields, at: string): TaskRecord {
  return {
    ...fields,
    status: 'posted',
    claimerDid: null,
    scheduleId: null,
    topUpScheduleId: null,
    escrowStatus: 'none',
    escrowedTinybars: '0',
    verificationAttempts: 0,
    resultBody: null,
    resultIpfs: null,
    resultSha256: null,
    paymentTxId: null,
    refundTxId: null,
    createdAt: at,
    updatedAt: at,
    claimEndsAt: null,
    reviewEndsAt: null,
    fundingEndsAt: null,
    deliveredAt: null,
    verification: null,
  };
}

/** The public view of a task (the record of DESIGN 10 without internal bookkeeping). */
export type TaskView = Omit<TaskRecord, 'escrowedTinybars' | 'feeBps' | 'refundTxId' | 'topUpScheduleId' | 'priceTinybars'> & {
  topUpScheduleId?: string | null;
  refundTxId?: string | null;
};

// ------------------------------------------------------------------ state machine

/** Statuses each operation is allowed in (SPEC 3 table). */
export const ALLOWED_FROM: Record<TaskOperation, readonly TaskStatus[]> = {
  claim: ['posted'],
  deliver: ['claimed'],
  verify: ['delivered'],
  complete: ['delivered'],
  cancel: ['posted', 'claimed', 'delivered'],
  increaseReward: ['posted', 'claimed'],
  preparePayment: ['delivered'],
};

/** HTTP status of an operation in a wrong status: 409 for claim and deliver, 400 for the rest (SPEC 3). */
export function wrongStatusHttp(op: TaskOperation): 409 | 400 {
  return op === 'claim' || op === 'deliver' ? 409 : 400;
}

/** Error kinds a task operation can be refused with; the API maps each to a catalog code and status. */
export type TaskRefusalKind = 'wrong_status' | 'not_poster' | 'not_claimer' | 'invalid';

export interface TaskRefusal {
  kind: TaskRefusalKind;
  /** catalog code (domain/errors.ts) */
  code: string;
  status: number;
  message: string;
  hint?: string;
}

export function wrongStatus(op: TaskOperation, task: Pick<TaskRecord, 'taskId' | 'status'>): TaskRefusal {
  const status = wrongStatusHttp(op);
  const allowed = ALLOWED_FROM[op].join(' or ');
  if (op === 'claim') {
    return { kind: 'wrong_status', code: 'market_task_already_claimed', status, message: `Task ${task.taskId} is ${task.status}, not posted`, hint: 'Pick another posted task' };
  }
  return {
    kind: 'wrong_status',
    code: 'invalid_request',
    status,
    message: `Task ${task.taskId} is ${task.status}; ${opLabel(op)} needs ${allowed}`,
    hint: `GET /market/tasks/${task.taskId} shows its status`,
  };
}

function opLabel(op: TaskOperation): string {
  return op === 'increaseReward' ? 'increase-reward' : op === 'preparePayment' ? 'prepare-payment' : op;
}

/**
 * Why `op` by `callerDid` is refused in the task's current state, or null when it may proceed.
 * The caller checks (poster, claimer) come after the status check, as the SPEC lists them.
 */
export function refusalOf(op: TaskOperation, task: TaskRecord, callerDid?: string): TaskRefusal | null {
  if (!ALLOWED_FROM[op].includes(task.status)) return wrongStatus(op, task);
  switch (op) {
    case 'claim':
      if (callerDid && callerDid === task.posterDid) {
        return { kind: 'invalid', code: 'invalid_request', status: 400, message: 'The poster cannot claim their own task', hint: 'Claim with another agent' };
      }
      return null;
    case 'deliver':
      if (callerDid !== task.claimerDid) {
        return { kind: 'not_claimer', code: 'market_task_not_claimed_by_agent', status: 403, message: `Task ${task.taskId} is not claimed by ${callerDid ?? 'the caller'}`, hint: 'Only the claimer may deliver' };
      }
      return null;
    case 'complete':
    case 'preparePayment':
      if (callerDid !== undefined && callerDid !== task.posterDid) return notPoster(task, callerDid);
      if (!task.claimerDid) {
        return { kind: 'invalid', code: 'market_task_not_claimed_by_agent', status: 400, message: `Task ${task.taskId} has no claimer`, hint: 'A task is completed after a claimer delivered' };
      }
      return null;
    case 'cancel':
    case 'increaseReward':
      if (callerDid !== undefined && callerDid !== task.posterDid) return notPoster(task, callerDid);
      return null;
    case 'verify':
      return null;
  }
}

/** The steps a client may repeat after a lost answer and get the step's outcome. */
export type RepeatableStep = 'claim' | 'deliver' | 'complete' | 'cancel';

/** A step request as far as it decides whether it repeats a step already taken. */
export interface StepRequest {
  callerDid: string;
  /** deliver: the result sent (the same result, or it is another delivery) */
  resultBody?: string | null;
  resultIpfs?: string | null;
}

/**
 * True when `op` by this caller is a step the task has already taken (or, in the workflow, is taking
 * now): the claimer claiming a task it claimed (claimed or delivered), the claimer delivering the
 * result it delivered (delivered), the poster completing a completed task or cancelling a cancelled
 * one. Such a request is a retry whose answer was lost: it answers the task as it is, with no second
 * side effect. Another party, another step or another result is not a repeat (refusalOf decides).
 */
export function repeatsStep(op: RepeatableStep, task: TaskRecord, req: StepRequest): boolean {
  switch (op) {
    case 'claim':
      return (task.status === 'claimed' || task.status === 'delivered') && task.claimerDid === req.callerDid;
    case 'deliver':
      return (
        task.status === 'delivered' &&
        task.claimerDid === req.callerDid &&
        (req.resultBody ?? null) === task.resultBody &&
        (req.resultIpfs ?? null) === task.resultIpfs
      );
    case 'complete':
      return task.status === 'completed' && task.posterDid === req.callerDid;
    case 'cancel':
      return task.status === 'cancelled' && task.posterDid === req.callerDid;
  }
}

function notPoster(task: TaskRecord, callerDid: string): TaskRefusal {
  return { kind: 'not_poster', code: 'auth_did_mismatch', status: 403, message: `${callerDid} is not the poster of task ${task.taskId}`, hint: `Sign as the poster ${task.posterDid}` };
}

/** A new price must be above the current one (SPEC: "valid new price"). */
export function increaseRefusal(task: TaskRecord, newPriceHbar: number): TaskRefusal | null {
  const t = hbarToTinybars(newPriceHbar);
  if (t === null) {
    return { kind: 'invalid', code: 'invalid_request', status: 400, message: 'newPriceHbar must be a positive number of HBAR with at most 8 decimals', hint: `At most ${PRICE_HBAR_MAX} HBAR` };
  }
  if (t <= BigInt(task.priceTinybars)) {
    return { kind: 'invalid', code: 'invalid_request', status: 400, message: `newPriceHbar must be above the current price ${task.priceHbar}`, hint: 'Send a higher price' };
  }
  return null;
}

/** The reward of a task may be raised `max` times (each raise replaces an escrow schedule at the operator's cost). */
export function increaseCapRefusal(task: Pick<TaskRecord, 'rewardIncreases' | 'taskId'>, max: number): TaskRefusal | null {
  if ((task.rewardIncreases ?? 0) < max) return null;
  return {
    kind: 'invalid',
    code: 'invalid_request',
    status: 400,
    message: `The reward of task ${task.taskId} was raised ${task.rewardIncreases} times, the most allowed`,
    hint: 'Cancel the task and post it again at the price you want',
  };
}

/** The escrow statuses in which the poster's money sits (or will sit) in a schedule or the escrow account. */
export function escrowPending(s: EscrowStatus): boolean {
  return s === 'scheduled' || s === 'funded';
}

// ------------------------------------------------------------------ rules the API and the workflow both apply
// One text each: the routes (api/market/) refuse early with them, the taskLifecycle workflow's
// validators and handlers refuse with them again (a client may reach the workflow another way).

const invalid = (message: string, hint?: string): TaskRefusal => ({ kind: 'invalid', code: 'invalid_request', status: 400, message, hint });

/** The posting step failed (refusedAtPosting): the answer to the post. */
export function postingRefusal(task: Pick<TaskRecord, 'status' | 'escrow' | 'escrowStatus' | 'scheduleId'>): TaskRefusal | null {
  if (!refusedAtPosting(task)) return null;
  return invalid('The escrow schedule could not be created for this poster', 'The poster account must exist and hold the price');
}

/** Why a delivery's result is refused (SPEC 8: resultBody at most RESULT_BODY_MAX_BYTES, or an IPFS reference), or null. */
export function deliveryRefusal(d: { resultBody?: string; resultIpfs?: string }): TaskRefusal | null {
  if (d.resultBody === undefined && d.resultIpfs === undefined) {
    return invalid('A result is missing: send resultBody or resultIpfs', `resultBody up to ${RESULT_BODY_MAX_BYTES} bytes, or resultIpfs`);
  }
  if (d.resultBody !== undefined && isResultBodyTooLarge(d.resultBody)) {
    return invalid(`resultBody is over ${RESULT_BODY_MAX_BYTES} bytes`, 'Store larger results elsewhere and send resultIpfs (ipfs://<CID>)');
  }
  if (d.resultIpfs !== undefined && !isResultIpfs(d.resultIpfs)) return invalid('resultIpfs is not an IPFS reference', 'Use ipfs://<CID>[/path]');
  return null;
}

/** How a task without escrow is paid (the hint of its refusals, the prepare-payment route's description). */
export const PAYMENT_RECIPE =
  'POST /market/tasks/{taskId}/prepare-payment (DID-signed as the poster) returns txBytes; sign its body with the poster key ' +
  '(offline, or POST /market/sign) and send complete { posterDid, txBytes, signature, publicKey } within about 100 s, or send txBytes ' +
  'signed with the SDK (Transaction.fromBytes(txBytes).sign(key).toBytes()), or posterPrivateKey.';

/** The schedules of a task still waiting for the poster's signature: the funding schedule while scheduled, and a top-up. */
export function pendingScheduleIds(task: Pick<TaskRecord, 'escrowStatus' | 'scheduleId' | 'topUpScheduleId'>): string[] {
  const ids: string[] = [];
  if (task.escrowStatus === 'scheduled' && task.scheduleId) ids.push(task.scheduleId);
  if (task.topUpScheduleId) ids.push(task.topUpScheduleId);
  return ids;
}

/** Why an escrow task cannot be released now (its schedule expired unsigned, or its escrow is no longer pending); null without escrow. */
export function escrowReleaseRefusal(task: Pick<TaskRecord, 'escrow' | 'escrowStatus'>): TaskRefusal | null {
  if (!task.escrow) return null;
  if (task.escrowStatus === 'expired') return invalid('The escrow schedule expired before it was signed', 'Raise the reward (a new schedule is created) or cancel the task');
  if (!escrowPending(task.escrowStatus)) return invalid(`The escrow is ${task.escrowStatus}`);
  return null;
}

/** What a complete request brings to pay the claimer with. */
export interface CompletionMeans {
  /** escrow: the poster's signature of the pending schedules (API: posterPrivateKey; workflow: a ScheduleSign each, when any is pending) */
  posterSignature: boolean;
  /** a transfer signed by the poster (API: txBytes, signature or publicKey, or without escrow the poster's key signing one; workflow: its bytes) */
  transfer: boolean;
}

/**
 * Escrow or not (SPEC 4.4a complete): an escrow task is released with the poster's signature of its
 * schedules and takes no transfer; a task without escrow is paid with the poster's signed transfer.
 */
export function completionRefusal(task: Pick<TaskRecord, 'escrow'>, means: CompletionMeans): TaskRefusal | null {
  if (task.escrow) {
    if (!means.posterSignature) {
      return invalid('This task is paid from escrow: posterPrivateKey is required (a signature-only transfer cannot release it)', 'Send posterPrivateKey, or use POST /market/tasks/{taskId}/complete-with-key');
    }
    if (means.transfer) return invalid('This task is paid from escrow: txBytes, publicKey and signature are not accepted', 'Send posterDid and posterPrivateKey only');
    return null;
  }
  if (!means.transfer) return invalid('Payment fields are missing: send txBytes (+ signature + publicKey) or posterPrivateKey', PAYMENT_RECIPE);
  return null;
}

/** prepare-payment: a task paid from escrow has no transfer to sign. */
export function directPaymentRefusal(task: Pick<TaskRecord, 'taskId' | 'escrow' | 'scheduleId'>): TaskRefusal | null {
  if (!task.escrow) return null;
  return invalid(`Task ${task.taskId} is paid from escrow (scheduleId ${task.scheduleId ?? 'pending'}): there is no transfer to sign`, 'Complete it with posterPrivateKey (POST /market/tasks/{taskId}/complete or complete-with-key)');
}

/**
 * The one payment completing a task without escrow may make (domain/ledgerTransaction.ts checks
 * client bytes against it): the poster pays the price, the claimer gets price - fee, the treasury
 * the fee (floor of feeBps), with the task's payment memo.
 */
export function taskPayment(task: Pick<TaskRecord, 'taskId' | 'priceTinybars' | 'feeBps'>, accounts: { poster: string; claimer: string; treasury: string }): ExpectedPayment & { treasury: string };
export function taskPayment(task: Pick<TaskRecord, 'taskId' | 'priceTinybars' | 'feeBps'>, accounts: { poster: string; claimer: string; treasury?: string }): ExpectedPayment;
export function taskPayment(task: Pick<TaskRecord, 'taskId' | 'priceTinybars' | 'feeBps'>, accounts: { poster: string; claimer: string; treasury?: string }): ExpectedPayment {
  const { claimerTinybars, feeTinybars } = payoutOf(BigInt(task.priceTinybars), task.feeBps);
  return {
    payer: accounts.poster,
    claimer: accounts.claimer,
    treasury: accounts.treasury,
    priceTinybars: claimerTinybars + feeTinybars,
    feeTinybars,
    memo: paymentMemo(task.taskId),
  };
}

// ------------------------------------------------------------------ topic messages

export const TASK_MESSAGE_TYPES = [
  'task.posted',
  'task.claimed',
  'task.delivered',
  'task.verified',
  'task.completed',
  'task.cancelled',
  'task.reward_increased',
  'task.expired',
] as const;
export type TaskMessageType = (typeof TASK_MESSAGE_TYPES)[number];

/** A marketplace topic message: versioned JSON, ids and public values only, never a key or a result body. */
export interface TaskMessage {
  v: 1;
  type: TaskMessageType;
  taskId: string;
  /** step number within the task (1 = posted), so readers can order and deduplicate */
  seq: number;
  status: TaskStatus;
  escrowStatus: EscrowStatus;
  at: string;
  posterDid?: string;
  claimerDid?: string | null;
  title?: string;
  priceHbar?: number;
  capabilities?: string[];
  scheduleId?: string | null;
  paymentTxId?: string | null;
  refundTxId?: string | null;
  resultSha256?: string | null;
  /** never published (publicTaskMessage drops it): the topic is public and the result is the parties' until completion */
  resultIpfs?: string | null;
  passed?: boolean;
  reason?: string;
}

export function parseTaskMessage(text: string): TaskMessage | null {
  try {
    const m = JSON.parse(text) as TaskMessage;
    if (m && m.v === 1 && (TASK_MESSAGE_TYPES as readonly string[]).includes(m.type) && typeof m.taskId === 'string') return m;
  } catch {
    // not JSON
  }
  return null;
}

/** UUIDv7 (RFC 9562): version nibble 7, variant 10. */
export const TASK_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

export function isTaskId(s: string): boolean {
  return TASK_ID.test(s);
}
