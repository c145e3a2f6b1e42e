/**
 * The state of one taskLifecycle run and how each step ends: the task as the workflow holds it, its
 * counters (step number, ledger writes, schedule renewals), the schedule expiries, the mutex flag,
 * carried across continue-as-new; the activities it calls; the commit that ends every step (topic
 * message, projection, search attributes). Deterministic: workflow code only.
 */
import { patched, proxyActivities, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { MarketLedgerActivities } from '../../activities/ledger/market.js';
import type { MarketDbActivities } from '../../activities/db/market.js';
import type { StepAuthorisationActivities } from '../../activities/db/stepAuthorisations.js';
import { parseHederaDid } from '@agent-passport/core/did';
import { DEFAULT_FUNDING_WINDOW_S, escrowUnfunded, type TaskMessage, type TaskMessageType, type TaskRecord } from '../../domain/market.js';
import { HEARTBEAT_TIMEOUT_MS, LEDGER_MAX_ATTEMPTS, RETRY_MAXIMUM_MS } from '../activityOptions.js';
import type { TaskLedgerFacts, TaskLifecycleInput, TaskTimings, TaskVerifierActivities } from '../contracts/taskLifecycle.js';

export const TaskStatusKey = defineSearchAttributeKey('TaskStatus', SearchAttributeType.KEYWORD);
export const EscrowStatusKey = defineSearchAttributeKey('EscrowStatus', SearchAttributeType.KEYWORD);
export const PosterDidKey = defineSearchAttributeKey('PosterDid', SearchAttributeType.KEYWORD);
export const ClaimerDidKey = defineSearchAttributeKey('ClaimerDid', SearchAttributeType.KEYWORD);
export const PriceHbarKey = defineSearchAttributeKey('PriceHbar', SearchAttributeType.DOUBLE);

/** patched() id: a repeated step (same party, same step) answers the task instead of a refusal. */
export const REPEATED_STEP_PATCH = 'task-repeated-step-answers-task';
/** patched() id: the escrow promises (claim, review and funding windows; bounded renewals; verify reusing its outcome). */
export const ESCROW_PROMISES_PATCH = 'task-escrow-promises';
/**
 * patched() id (issue 19 item 4): completion pays what the task escrowed, and while that is less
 * than the price (a top-up never funded) it creates a top-up schedule and answers 409 instead.
 */
export const ESCROW_PAYS_ESCROWED_PATCH = 'task-escrow-pays-escrowed';
/**
 * patched() id (issue 26 item 8): a schedule nobody signed lapses at its expiry instead of being
 * renewed (each renewal a ScheduleDelete + ScheduleCreate the operator paid, every 25 min for the
 * whole funding window); the poster funds at posting (/market/tasks/signed), signs within the
 * schedule's life, raises the reward (a fresh schedule) or posts again.
 */
export const UNFUNDED_SCHEDULES_LAPSE_PATCH = 'task-unfunded-schedules-lapse';

const DEFAULT_SCHEDULE_LIFETIME_MS = 30 * 60_000;
const DEFAULT_RENEW_LEAD_MS = 5 * 60_000;

/** Internal bookkeeping carried across continue-as-new. */
export type Carried = NonNullable<TaskLifecycleInput['carried']>;

export interface TaskRun {
  readonly wfId: string;
  /** the task as the workflow holds it (changed in place by the steps) */
  readonly task: TaskRecord;
  readonly posterAccount: string;
  /** the service's accounts and nodes (absent in workflows started before issue 19) */
  readonly facts?: TaskLedgerFacts;
  /** topic message step number */
  seq: number;
  /** ledger writes started so far: part of every idempotency key, so a refused write can be retried with new bytes */
  ops: number;
  /** bumped whenever timers may have moved, so the main loop recomputes its wake-up */
  version: number;
  /** a step holds the mutex (posting holds it from the first instruction, so no Update runs before the schedule exists) */
  busy: boolean;
  renewals: number;
  scheduleExpiresAt: string | null;
  topUpExpiresAt: string | null;
  topUpRenewals: number;
}

export function startRun(input: TaskLifecycleInput): TaskRun {
  const carried = input.carried;
  const task: TaskRecord = { ...(carried?.task ?? input.task) };
  return {
    wfId: workflowInfo().workflowId,
    task,
    posterAccount: parseHederaDid(task.posterDid)?.accountId ?? '',
    facts: input.ledger,
    seq: carried?.seq ?? 0,
    ops: carried?.ops ?? 0,
    version: 0,
    busy: !carried,
    renewals: carried?.renewals ?? 0,
    scheduleExpiresAt: carried?.scheduleExpiresAt ?? null,
    topUpExpiresAt: carried?.topUpExpiresAt ?? null,
    topUpRenewals: carried?.topUpRenewals ?? 0,
  };
}

/** What continue-as-new carries to the next run (with the Update nonces the run has seen, when it keeps them). */
export function carriedOf(run: TaskRun, nonces?: string[]): Carried {
  return {
    task: { ...run.task },
    seq: run.seq,
    renewals: run.renewals,
    scheduleExpiresAt: run.scheduleExpiresAt,
    topUpExpiresAt: run.topUpExpiresAt,
    topUpRenewals: run.topUpRenewals,
    ops: run.ops,
    ...(nonces && nonces.length ? { nonces } : {}),
  };
}

export const price = (run: TaskRun) => BigInt(run.task.priceTinybars);
export const escrowed = (run: TaskRun) => BigInt(run.task.escrowedTinybars);
/** The idempotency key of the run's next ledger write. */
export const opKey = (run: TaskRun, step: string) => `${run.wfId}/o${++run.ops}-${step}`;
export const nowIso = () => new Date(Date.now()).toISOString();
export const isoIn = (ms: number) => new Date(Date.now() + ms).toISOString();

/** The escrow schedules' lifetime and renewals (milliseconds). */
export interface ScheduleTimings {
  lifetimeMs: number;
  renewLeadMs: number;
  maxRenewals: number;
  fundingWindowMs: number;
}

export function scheduleTimings(input: TaskLifecycleInput, promises: boolean): ScheduleTimings {
  const t = input.timings ?? {};
  const lifetimeMs = t.scheduleLifetimeMs ?? DEFAULT_SCHEDULE_LIFETIME_MS;
  const renewLeadMs = Math.min(t.renewLeadMs ?? DEFAULT_RENEW_LEAD_MS, Math.floor(lifetimeMs / 2));
  const fundingWindowMs = ((input.carried?.task ?? input.task).fundingWindowSeconds ?? DEFAULT_FUNDING_WINDOW_S) * 1000;
  // unbounded before the escrow promises; since, as many as the funding window holds (an unfunded task is
  // cancelled at its end); since issue 26, none: an unsigned schedule lapses (timings may still ask for some, tests)
  const maxRenewals =
    t.maxRenewals ??
    (!promises ? Number.MAX_SAFE_INTEGER : patched(UNFUNDED_SCHEDULES_LAPSE_PATCH) ? 0 : Math.ceil(fundingWindowMs / Math.max(1, lifetimeMs - renewLeadMs)));
  return { lifetimeMs, renewLeadMs, maxRenewals, fundingWindowMs };
}

/** The activities of the workflow, by retry policy. */
export function taskActivities(t: TaskTimings) {
  const retry = { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2 };
  const startToCloseTimeout = t.activityTimeoutMs ?? 120_000;
  /** a SIGKILLed worker's attempt is retried after HEARTBEAT_TIMEOUT_MS (the keep-alive heartbeats every activity) */
  const heartbeatTimeout = HEARTBEAT_TIMEOUT_MS;
  return {
    /** ledger writes whose final refusal the step answers (a bounded number of attempts) */
    ledger: proxyActivities<MarketLedgerActivities>({ startToCloseTimeout, heartbeatTimeout, retry: { ...retry, maximumAttempts: t.ledgerMaxAttempts ?? LEDGER_MAX_ATTEMPTS } }),
    /** topic messages, the projection, payouts and refunds must eventually happen: retried until they do */
    durable: proxyActivities<MarketLedgerActivities & MarketDbActivities & StepAuthorisationActivities>({ startToCloseTimeout, heartbeatTimeout, retry }),
    verifier: proxyActivities<TaskVerifierActivities>({ startToCloseTimeout: 60_000, heartbeatTimeout, retry: { ...retry, maximumAttempts: 3 } }),
  };
}

export type TaskActivities = ReturnType<typeof taskActivities>;

/** Search attributes, and the current details the Web UI shows (kept across continue-as-new, unlike the start's summary). */
export function searchAttributes(task: TaskRecord): void {
  setCurrentDetails(
    [
      `**${task.title.slice(0, 120)}** (${task.taskId})`,
      `**Status** ${task.status} | **Escrow** ${task.escrowStatus}${task.scheduleId ? ` (schedule ${task.scheduleId})` : ''}`,
      `**Price** ${task.priceHbar} HBAR | **Poster** ${task.posterDid} | **Claimer** ${task.claimerDid ?? '-'}`,
      task.paymentTxId ? `**Payment** ${task.paymentTxId}` : task.refundTxId ? `**Refund** ${task.refundTxId}` : '',
    ]
      .filter(Boolean)
      .join('\n'),
  );
  upsertSearchAttributes([
    { key: TaskStatusKey, value: task.status },
    { key: EscrowStatusKey, value: task.escrowStatus },
    { key: PosterDidKey, value: task.posterDid },
    { key: PriceHbarKey, value: task.priceHbar },
    ...(task.claimerDid ? [{ key: ClaimerDidKey, value: task.claimerDid }] : []),
  ]);
}

export type Commit = (type: TaskMessageType | null, extra?: Partial<TaskMessage>) => Promise<void>;

/** Ends a step: its topic message (when it has one), the projection, the search attributes. */
export function committer(run: TaskRun, durable: TaskActivities['durable']): Commit {
  return async (type, extra = {}) => {
    const task = run.task;
    run.seq++;
    task.updatedAt = nowIso();
    // a window that no longer applies is not shown (the escrow got funded, the task ended)
    if (task.fundingEndsAt && !escrowUnfunded(task)) task.fundingEndsAt = null;
    if (task.status === 'completed' || task.status === 'cancelled') {
      if (task.claimEndsAt) task.claimEndsAt = null;
      if (task.reviewEndsAt) task.reviewEndsAt = null;
      if (task.fundingEndsAt) task.fundingEndsAt = null;
    }
    if (type) {
      const message: TaskMessage = {
        v: 1,
        type,
        taskId: task.taskId,
        seq: run.seq,
        status: task.status,
        escrowStatus: task.escrowStatus,
        at: task.updatedAt,
        ...extra,
      };
      await durable.publishTaskMessage({ idempotencyKey: `${run.wfId}/m${run.seq}`, message });
    }
    // the step's name and reason travel with the projection: they name the parties' event (issue 28)
    const reason = typeof extra.reason === 'string' ? extra.reason : undefined;
    await durable.projectTask({ task: { ...task }, seq: run.seq, step: type ? { type, ...(reason ? { reason } : {}) } : null });
    searchAttributes(task);
    run.version++;
  };
}
