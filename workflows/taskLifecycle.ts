/**
 * taskLifecycle (id task:{taskId}): one long-running workflow per marketplace task (SPEC 3; DESIGN.md
 * sections 5, 6 "Marketplace escrow", 10 "Marketplace"). Its interface is workflows/taskTypes.ts.
 *
 *   posting      ScheduleCreate poster -> escrow (escrow tasks): scheduled; task.posted
 *   fund         the poster's ScheduleSign (from /market/tasks/signed): funded
 *   claim        task.claimed                 deliver    task.delivered
 *   verify       runTaskVerifier, attempts counted; task.verified (never completes or pays)
 *   complete     pending schedules signed by the poster first, then escrow -> claimer (price - fee)
 *                and escrow -> treasury (fee) in one transfer: released; or, without escrow, the
 *                poster's own signed transfer; task.completed with paymentTxId
 *   cancel       scheduled: ScheduleDelete (cancelled); funded: escrow -> poster (refunded); task.cancelled
 *   increaseReward  scheduled: delete + new schedule; funded: a top-up schedule; task.reward_increased
 *   timers       a pending schedule is renewed (delete + create) before it expires, or marked expired
 *                (task.expired) after maxRenewals; at the optional deadline an unfinished task is
 *                cancelled and refunded (task.expired)
 *
 * Each step runs alone (a small mutex), publishes its marketplace topic message and writes the
 * projection (+ NOTIFY task_changed), and upserts the search attributes. Validators refuse with a
 * TaskRefusal ApplicationFailure before anything runs; handlers check again under the mutex. The
 * same party repeating claim, deliver (same result), complete or cancel gets the task after the step
 * (waiting for it when it is still running), never a refusal and never a second run.
 * Continue-as-new carries the state when the history grows.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  patched,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { defineSearchAttributeKey, SearchAttributeType } from '@temporalio/common';
import type { MarketLedgerActivities } from '../activities/ledger/market.js';
import type { TaskDbActivities } from '../activities/db/tasks.js';
import { parseHederaDid } from '../domain/did.js';
import { HEARTBEAT_TIMEOUT_MS, LEDGER_MAX_ATTEMPTS, RETRY_MAXIMUM_MS } from './activityOptions.js';
import {
  hbarToTinybars,
  increaseRefusal,
  isResultBodyTooLarge,
  isResultIpfs,
  payoutOf,
  refusalOf,
  repeatsStep,
  RESULT_BODY_MAX_BYTES,
  tinybarsToHbar,
  type TaskMessage,
  type TaskMessageType,
  type TaskOperation,
  type TaskRecord,
  type RepeatableStep,
  type StepRequest,
  type TaskRefusal,
} from '../domain/market.js';
import {
  cancelUpdate,
  claimUpdate,
  completeUpdate,
  deliverUpdate,
  fundUpdate,
  increaseRewardUpdate,
  syncUpdate,
  TASK_REFUSAL_TYPE,
  taskStateQuery,
  verifyUpdate,
  type ScheduleSignBytes,
  type TaskLifecycleInput,
  type TaskVerifierActivities,
  type VerifyResult,
} from './taskTypes.js';

export * from './taskTypes.js';

export const TaskStatusKey = defineSearchAttributeKey('TaskStatus', SearchAttributeType.KEYWORD);
export const EscrowStatusKey = defineSearchAttributeKey('EscrowStatus', SearchAttributeType.KEYWORD);
export const PosterDidKey = defineSearchAttributeKey('PosterDid', SearchAttributeType.KEYWORD);
export const ClaimerDidKey = defineSearchAttributeKey('ClaimerDid', SearchAttributeType.KEYWORD);
export const PriceHbarKey = defineSearchAttributeKey('PriceHbar', SearchAttributeType.DOUBLE);

const DEFAULT_SCHEDULE_LIFETIME_MS = 30 * 60_000;
const DEFAULT_RENEW_LEAD_MS = 5 * 60_000;
const LEDGER_FAILURE_PREFIX = 'LedgerError.';
/** patched() id: a repeated step (same party, same step) answers the task instead of a refusal. */
export const REPEATED_STEP_PATCH = 'task-repeated-step-answers-task';

/** Internal bookkeeping carried across continue-as-new. */
type Carried = NonNullable<TaskLifecycleInput['carried']>;

function refusalFailure(r: TaskRefusal): ApplicationFailure {
  return ApplicationFailure.create({ message: r.message, type: TASK_REFUSAL_TYPE, nonRetryable: true, details: [r] });
}

function refuse(r: TaskRefusal | null): void {
  if (r) throw refusalFailure(r);
}

function badRequest(message: string, hint?: string): ApplicationFailure {
  return refusalFailure({ kind: 'invalid', code: 'invalid_request', status: 400, message, hint });
}

/** A final ledger refusal met in a step (activity failure of type LedgerError.*) as a 400 refusal. */
function ledgerRefusal(err: unknown, what: string): never {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure && cause.type?.startsWith(LEDGER_FAILURE_PREFIX)) {
    const status = cause.type.slice(LEDGER_FAILURE_PREFIX.length);
    throw refusalFailure({ kind: 'invalid', code: 'invalid_request', status: 400, message: `${what}: the ledger answered ${status}`, hint: ledgerHint(status) });
  }
  throw err;
}

function ledgerHint(status: string): string {
  if (status === 'INSUFFICIENT_ACCOUNT_BALANCE' || status === 'INSUFFICIENT_PAYER_BALANCE') return 'The poster account must hold the price in HBAR';
  if (status === 'NO_NEW_VALID_SIGNATURES' || status === 'INVALID_SIGNATURE') return "Sign with the poster account's own private key";
  if (status === 'TRANSACTION_EXPIRED') return 'Send the request again (signed transactions are valid 120 s)';
  return 'See the ledger status; nothing was paid';
}

export async function taskLifecycle(input: TaskLifecycleInput): Promise<TaskRecord> {
  const t = input.timings ?? {};
  const retry = { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2 };
  const startToCloseTimeout = t.activityTimeoutMs ?? 120_000;
  /** a SIGKILLed worker's attempt is retried after HEARTBEAT_TIMEOUT_MS (the keep-alive heartbeats every activity) */
  const heartbeatTimeout = HEARTBEAT_TIMEOUT_MS;
  const ledger = proxyActivities<MarketLedgerActivities>({ startToCloseTimeout, heartbeatTimeout, retry: { ...retry, maximumAttempts: t.ledgerMaxAttempts ?? LEDGER_MAX_ATTEMPTS } });
  /** topic messages and the projection must eventually happen: retried until they do */
  const durable = proxyActivities<MarketLedgerActivities & TaskDbActivities>({ startToCloseTimeout, heartbeatTimeout, retry });
  const verifier = proxyActivities<TaskVerifierActivities>({ startToCloseTimeout: 60_000, heartbeatTimeout, retry: { ...retry, maximumAttempts: 3 } });
  const lifetimeMs = t.scheduleLifetimeMs ?? DEFAULT_SCHEDULE_LIFETIME_MS;
  const renewLeadMs = Math.min(t.renewLeadMs ?? DEFAULT_RENEW_LEAD_MS, Math.floor(lifetimeMs / 2));
  const maxRenewals = t.maxRenewals ?? Number.MAX_SAFE_INTEGER;

  const wfId = workflowInfo().workflowId;
  const carried: Carried | undefined = input.carried;
  const task: TaskRecord = { ...(carried?.task ?? input.task) };
  let seq = carried?.seq ?? 0;
  let renewals = carried?.renewals ?? 0;
  let scheduleExpiresAt = carried?.scheduleExpiresAt ?? null;
  let topUpExpiresAt = carried?.topUpExpiresAt ?? null;
  let topUpRenewals = carried?.topUpRenewals ?? 0;
  /** ledger writes started so far: part of every idempotency key, so a refused write can be retried with new bytes */
  let ops = carried?.ops ?? 0;
  /** bumped whenever timers may have moved, so the main loop recomputes its wake-up */
  let version = 0;
  // Posting holds the mutex from the first instruction, so no Update runs before the schedule exists.
  let busy = !carried;

  const posterAccount = parseHederaDid(task.posterDid)?.accountId ?? '';
  const nowIso = () => new Date(Date.now()).toISOString();
  const price = () => BigInt(task.priceTinybars);
  const escrowed = () => BigInt(task.escrowedTinybars);
  const key = (step: string) => `${wfId}/o${++ops}-${step}`;

  async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await condition(() => !busy);
    busy = true;
    try {
      return await fn();
    } finally {
      busy = false;
      version++;
    }
  }

  /** Search attributes, and the current details the Web UI shows (kept across continue-as-new, unlike the start's summary). */
  function searchAttributes() {
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

  /** Ends a step: its topic message (when it has one), the projection, the search attributes. */
  async function commit(type: TaskMessageType | null, extra: Partial<TaskMessage> = {}): Promise<void> {
    seq++;
    task.updatedAt = nowIso();
    if (type) {
      const message: TaskMessage = {
        v: 1,
        type,
        taskId: task.taskId,
        seq,
        status: task.status,
        escrowStatus: task.escrowStatus,
        at: task.updatedAt,
        ...extra,
      };
      await durable.publishTaskMessage({ idempotencyKey: `${wfId}/m${seq}`, message });
    }
    await durable.projectTask({ task: { ...task }, seq });
    searchAttributes();
    version++;
  }

  async function createSchedule(amount: bigint, purpose: 'fund' | 'topup'): Promise<{ scheduleId: string; expiresAt: string }> {
    const expiresAt = new Date(Date.now() + lifetimeMs).toISOString();
    try {
      const r = await ledger.createEscrowSchedule({
        idempotencyKey: key(`${purpose}-create`),
        taskId: task.taskId,
        posterAccountId: posterAccount,
        amountTinybars: amount.toString(),
        expiresAt,
        purpose,
      });
      return { scheduleId: r.scheduleId, expiresAt };
    } catch (err) {
      return ledgerRefusal(err, 'The escrow schedule could not be created');
    }
  }

  /** Deletes a pending schedule; true when it had executed meanwhile (its amount is then in escrow). */
  async function deleteSchedule(scheduleId: string, label: string): Promise<boolean> {
    const r = await ledger.deleteEscrowSchedule({ idempotencyKey: key(`delete-${label}-${scheduleId}`), scheduleId });
    return r.executed;
  }

  /**
   * A pending schedule is no longer pending: the funding schedule's escrow becomes `status` (funded or
   * expired); a top-up schedule is dropped (its amount, when it ran, was added by the caller).
   */
  function settle(which: 'fund' | 'topup', status: 'funded' | 'expired'): void {
    if (which === 'fund') {
      task.escrowStatus = status;
      scheduleExpiresAt = null;
    } else {
      task.topUpScheduleId = null;
      topUpExpiresAt = null;
    }
  }

  /** Submits the poster's ScheduleSign of each pending schedule; afterwards the escrow holds the price. */
  async function signPending(signs: ScheduleSignBytes[], what: string): Promise<void> {
    const pending: { scheduleId: string; amount: bigint; topUp: boolean }[] = [];
    if (task.escrowStatus === 'scheduled' && task.scheduleId) pending.push({ scheduleId: task.scheduleId, amount: price(), topUp: false });
    if (task.topUpScheduleId) pending.push({ scheduleId: task.topUpScheduleId, amount: price() - escrowed(), topUp: true });
    for (const p of pending) {
      const sign = signs.find((s) => s.scheduleId === p.scheduleId);
      if (!sign) throw badRequest(`The escrow schedule ${p.scheduleId} needs the poster's signature`, 'Send posterPrivateKey (the service signs the schedule in memory)');
      let outcome;
      try {
        outcome = await ledger.submitScheduleSign({ idempotencyKey: key(`sign-${p.scheduleId}`), scheduleId: p.scheduleId, signedBytes: sign.signedBytes });
      } catch (err) {
        ledgerRefusal(err, what);
      }
      if (outcome.failedStatus) {
        throw refusalFailure({ kind: 'invalid', code: 'invalid_request', status: 400, message: `${what}: the escrow transfer failed with ${outcome.failedStatus}`, hint: ledgerHint(outcome.failedStatus) });
      }
      if (!outcome.executed) throw badRequest(`${what}: the signature did not complete escrow schedule ${p.scheduleId}`, ledgerHint('INVALID_SIGNATURE'));
      task.escrowedTinybars = (escrowed() + p.amount).toString();
      settle(p.topUp ? 'topup' : 'fund', 'funded');
      version++;
    }
  }

  /** Cancels the escrow: pending schedules deleted, anything held refunded to the poster. */
  async function unwindEscrow(): Promise<void> {
    if (task.escrowStatus === 'scheduled' && task.scheduleId) {
      if (await deleteSchedule(task.scheduleId, 'fund')) {
        task.escrowedTinybars = (escrowed() + price()).toString();
        task.escrowStatus = 'funded';
      } else task.escrowStatus = 'cancelled';
      scheduleExpiresAt = null;
    }
    if (task.topUpScheduleId) {
      const topUpAmount = price() - escrowed();
      if (await deleteSchedule(task.topUpScheduleId, 'topup')) task.escrowedTinybars = (escrowed() + topUpAmount).toString();
      task.topUpScheduleId = null;
      topUpExpiresAt = null;
    }
    if (escrowed() > 0n) {
      const r = await durable.refundEscrow({ idempotencyKey: `${wfId}/refund`, taskId: task.taskId, posterAccountId: posterAccount, amountTinybars: escrowed().toString() });
      task.refundTxId = r.transactionId;
      task.escrowedTinybars = '0';
      task.escrowStatus = 'refunded';
    }
  }

  function check(op: TaskOperation, caller?: string): void {
    refuse(refusalOf(op, task, caller));
  }

  /**
   * A repeat of a step already taken or being taken (domain/market.ts repeatsStep: a retry whose
   * answer was lost). The validator accepts it (the step's new status is set before its commit ends,
   * so a retry during the commit would otherwise be refused); the handler, under the mutex, so after
   * the running step, answers the task as it is without running anything. Histories from before
   * this rule replay the refusal they recorded (patched).
   */
  const repeats = (op: RepeatableStep, req: StepRequest) => repeatsStep(op, task, req);
  const repeated = (op: RepeatableStep, req: StepRequest) => repeats(op, req) && patched(REPEATED_STEP_PATCH);

  /**
   * Steps in flight per party: an Update accepted and not answered yet (waiting for the mutex or
   * running). The same party's same step arriving meanwhile is answered "still running" by its
   * validator (202 at the API) instead of queueing a second Update behind the first: a queued retry
   * holds bytes signed at its request time (valid 120 s) that can expire before its turn, and a client
   * retrying a slow step would queue them faster than they drain. Only state, no commands: histories
   * replay as they were (validators do not run on replay).
   */
  const inFlight = new Map<string, StepRequest>();
  /** the same request: the same party, and for deliver the same result (another result is another delivery) */
  const sameRequest = (a: StepRequest, b: StepRequest) => a.callerDid === b.callerDid && a.resultBody === b.resultBody && a.resultIpfs === b.resultIpfs;
  const refuseInFlight = (op: RepeatableStep, req: StepRequest) => {
    const running = inFlight.get(`${op} ${req.callerDid}`);
    if (!running || !sameRequest(running, req)) return;
    refuse({ kind: 'invalid', code: 'request_pending', status: 202, message: `The ${op} of task ${task.taskId} by ${req.callerDid} is still running`, hint: `Poll GET /market/tasks/${task.taskId}` });
  };
  async function tracked<T>(op: RepeatableStep, req: StepRequest, fn: () => Promise<T>): Promise<T> {
    const k = `${op} ${req.callerDid}`;
    inFlight.set(k, req);
    try {
      return await fn();
    } finally {
      if (inFlight.get(k) === req) inFlight.delete(k);
    }
  }

  // ---------------------------------------------------------------- handlers

  setHandler(taskStateQuery, () => ({ ...task }));

  setHandler(syncUpdate, () => exclusive(async () => ({ ...task })));

  setHandler(
    fundUpdate,
    (args) =>
      exclusive(async () => {
        if (args.posterDid !== task.posterDid) check('cancel', args.posterDid);
        if (task.escrowStatus !== 'scheduled' && !task.topUpScheduleId) return { ...task };
        await signPending(args.scheduleSigns, 'The escrow could not be funded');
        await commit(null);
        return { ...task };
      }),
    {
      validator: (args) => {
        if (args.posterDid !== task.posterDid) check('cancel', args.posterDid);
      },
    },
  );

  setHandler(
    claimUpdate,
    (args) =>
      tracked('claim', { callerDid: args.claimerDid }, () => exclusive(async () => {
        if (repeated('claim', { callerDid: args.claimerDid })) return { ...task };
        check('claim', args.claimerDid);
        task.status = 'claimed';
        task.claimerDid = args.claimerDid;
        await commit('task.claimed', { claimerDid: args.claimerDid });
        return { ...task };
      })),
    {
      validator: (args) => {
        refuseInFlight('claim', { callerDid: args.claimerDid });
        if (!repeats('claim', { callerDid: args.claimerDid })) check('claim', args.claimerDid);
      },
    },
  );

  const checkDelivery = (args: { resultBody?: string; resultIpfs?: string }) => {
    if (args.resultBody === undefined && args.resultIpfs === undefined) throw badRequest('A result is missing: send resultBody or resultIpfs');
    if (args.resultBody !== undefined && isResultBodyTooLarge(args.resultBody)) {
      throw badRequest(`resultBody is over ${RESULT_BODY_MAX_BYTES} bytes`, 'Store larger results elsewhere and send resultIpfs');
    }
    if (args.resultIpfs !== undefined && !isResultIpfs(args.resultIpfs)) throw badRequest('resultIpfs is not an IPFS reference', 'Use ipfs://<CID>[/path]');
  };

  const deliveryOf = (args: { claimerDid: string; resultBody?: string; resultIpfs?: string }): StepRequest => ({
    callerDid: args.claimerDid,
    resultBody: args.resultBody,
    resultIpfs: args.resultIpfs,
  });

  setHandler(
    deliverUpdate,
    (args) =>
      tracked('deliver', deliveryOf(args), () => exclusive(async () => {
        if (repeated('deliver', deliveryOf(args))) return { ...task };
        check('deliver', args.claimerDid);
        checkDelivery(args);
        task.status = 'delivered';
        task.resultBody = args.resultBody ?? null;
        task.resultIpfs = args.resultIpfs ?? null;
        task.resultSha256 = args.resultSha256 ?? null;
        await commit('task.delivered', { claimerDid: task.claimerDid, resultSha256: task.resultSha256, resultIpfs: task.resultIpfs });
        return { ...task };
      })),
    {
      validator: (args) => {
        refuseInFlight('deliver', deliveryOf(args));
        if (repeats('deliver', deliveryOf(args))) return;
        check('deliver', args.claimerDid);
        checkDelivery(args);
      },
    },
  );

  setHandler(
    verifyUpdate,
    (_args) =>
      exclusive(async (): Promise<VerifyResult> => {
        check('verify');
        task.verificationAttempts++;
        let result;
        try {
          result = await verifier.runTaskVerifier({
            taskId: task.taskId,
            verifierType: task.verifierType,
            verifierConfig: task.verifierConfig,
            resultBody: task.resultBody,
            resultIpfs: task.resultIpfs,
            resultSha256: task.resultSha256,
            attempt: task.verificationAttempts,
          });
        } catch (err) {
          const cause = err instanceof ActivityFailure && err.cause instanceof ApplicationFailure ? err.cause.message : 'the verifier failed';
          result = { passed: false, reasons: [`verifier error: ${cause}`] };
        }
        await commit('task.verified', { passed: result.passed });
        return { passed: result.passed, reasons: result.reasons, verificationAttempts: task.verificationAttempts, task: { ...task } };
      }),
    { validator: (_args) => check('verify') },
  );

  const checkComplete = (args: { posterDid: string; scheduleSigns?: ScheduleSignBytes[]; directTransferBytes?: string }) => {
    check('complete', args.posterDid);
    if (task.escrow) {
      if (task.escrowStatus === 'expired') throw badRequest('The escrow schedule expired before it was signed', 'Raise the reward (a new schedule is created) or cancel the task');
      if (task.escrowStatus !== 'scheduled' && task.escrowStatus !== 'funded') throw badRequest(`The escrow is ${task.escrowStatus}`);
      const needsSign = task.escrowStatus === 'scheduled' || task.topUpScheduleId !== null;
      if (needsSign && !(args.scheduleSigns && args.scheduleSigns.length > 0)) {
        throw badRequest('This task is paid from escrow: posterPrivateKey is required to release it', 'Send posterPrivateKey (a signature-only transfer cannot release escrow)');
      }
      if (args.directTransferBytes) throw badRequest('This task is paid from escrow: a direct transfer is not accepted', 'Send posterPrivateKey');
    } else if (!args.directTransferBytes) {
      throw badRequest('This task has no escrow: a signed payment transfer is required', 'Send txBytes + publicKey + signature, or posterPrivateKey');
    }
  };

  setHandler(
    completeUpdate,
    (args) =>
      tracked('complete', { callerDid: args.posterDid }, () => exclusive(async () => {
        if (repeated('complete', { callerDid: args.posterDid })) return { ...task };
        checkComplete(args);
        const claimerAccount = parseHederaDid(task.claimerDid!)?.accountId ?? '';
        if (task.escrow) {
          await signPending(args.scheduleSigns ?? [], 'The escrow could not be released');
          const { claimerTinybars, feeTinybars } = payoutOf(price(), task.feeBps);
          const r = await durable.payoutEscrow({
            idempotencyKey: `${wfId}/payout`,
            taskId: task.taskId,
            claimerAccountId: claimerAccount,
            claimerTinybars: claimerTinybars.toString(),
            feeTinybars: feeTinybars.toString(),
          });
          task.paymentTxId = r.transactionId;
          task.escrowedTinybars = (escrowed() - price()).toString();
          task.escrowStatus = 'released';
        } else {
          let r;
          try {
            r = await ledger.submitDirectTransfer({ idempotencyKey: key('payment'), signedBytes: args.directTransferBytes! });
          } catch (err) {
            ledgerRefusal(err, 'The payment could not be made');
          }
          task.paymentTxId = r.transactionId;
        }
        task.status = 'completed';
        await commit('task.completed', { claimerDid: task.claimerDid, paymentTxId: task.paymentTxId });
        return { ...task };
      })),
    {
      validator: (args) => {
        refuseInFlight('complete', { callerDid: args.posterDid });
        if (!repeats('complete', { callerDid: args.posterDid })) checkComplete(args);
      },
    },
  );

  async function cancelNow(type: 'task.cancelled' | 'task.expired', reason?: string): Promise<void> {
    await unwindEscrow();
    task.status = 'cancelled';
    await commit(type, { refundTxId: task.refundTxId, scheduleId: task.scheduleId, ...(reason ? { reason } : {}) });
  }

  setHandler(
    cancelUpdate,
    (args) =>
      tracked('cancel', { callerDid: args.posterDid }, () => exclusive(async () => {
        if (repeated('cancel', { callerDid: args.posterDid })) return { ...task };
        check('cancel', args.posterDid);
        await cancelNow('task.cancelled', args.reason);
        return { ...task };
      })),
    {
      validator: (args) => {
        refuseInFlight('cancel', { callerDid: args.posterDid });
        if (!repeats('cancel', { callerDid: args.posterDid })) check('cancel', args.posterDid);
      },
    },
  );

  const checkIncrease = (args: { posterDid: string; newPriceHbar: number }) => {
    check('increaseReward', args.posterDid);
    refuse(increaseRefusal(task, args.newPriceHbar));
  };

  setHandler(
    increaseRewardUpdate,
    (args) =>
      exclusive(async () => {
        checkIncrease(args);
        const newPrice = hbarToTinybars(args.newPriceHbar)!;
        const oldPriceHbar = task.priceHbar;
        if (task.escrow) {
          if (task.escrowStatus === 'scheduled' || task.escrowStatus === 'expired') {
            let executed = false;
            if (task.escrowStatus === 'scheduled' && task.scheduleId) executed = await deleteSchedule(task.scheduleId, 'fund');
            if (executed) {
              task.escrowedTinybars = (escrowed() + price()).toString();
              task.escrowStatus = 'funded';
              scheduleExpiresAt = null;
            } else {
              renewals = 0;
              const s = await createSchedule(newPrice, 'fund');
              task.scheduleId = s.scheduleId;
              scheduleExpiresAt = s.expiresAt;
              task.escrowStatus = 'scheduled';
            }
          }
          if (task.escrowStatus === 'funded') {
            if (task.topUpScheduleId) {
              const old = price() - escrowed();
              if (await deleteSchedule(task.topUpScheduleId, 'topup')) task.escrowedTinybars = (escrowed() + old).toString();
              task.topUpScheduleId = null;
              topUpExpiresAt = null;
            }
            if (newPrice > escrowed()) {
              topUpRenewals = 0;
              const s = await createSchedule(newPrice - escrowed(), 'topup');
              task.topUpScheduleId = s.scheduleId;
              topUpExpiresAt = s.expiresAt;
            }
          }
        }
        task.priceTinybars = newPrice.toString();
        task.priceHbar = tinybarsToHbar(newPrice);
        await commit('task.reward_increased', { priceHbar: task.priceHbar, scheduleId: task.scheduleId, reason: `from ${oldPriceHbar}` });
        return { ...task };
      }),
    { validator: checkIncrease },
  );

  // ---------------------------------------------------------------- posting

  if (!carried) {
    try {
      if (task.escrow) {
        const s = await createSchedule(price(), 'fund');
        task.scheduleId = s.scheduleId;
        scheduleExpiresAt = s.expiresAt;
        task.escrowStatus = 'scheduled';
      }
      await commit('task.posted', {
        posterDid: task.posterDid,
        title: task.title,
        priceHbar: task.priceHbar,
        capabilities: task.capabilities,
        scheduleId: task.scheduleId,
      });
    } catch (err) {
      // the schedule could not be created (e.g. the poster account does not exist): the task ends cancelled
      if (!(err instanceof ApplicationFailure && err.type === TASK_REFUSAL_TYPE)) throw err;
      task.status = 'cancelled';
      task.escrowStatus = 'none';
      await commit('task.cancelled', { posterDid: task.posterDid, reason: err.message });
      busy = false;
      return { ...task };
    } finally {
      busy = false;
      version++;
    }
  } else {
    searchAttributes();
  }

  // ---------------------------------------------------------------- timers and continue-as-new

  const terminal = () => task.status === 'completed' || task.status === 'cancelled';
  const historyLarge = () => {
    const info = workflowInfo();
    return info.continueAsNewSuggested || (t.continueAsNewAfterEvents !== undefined && info.historyLength >= t.continueAsNewAfterEvents);
  };
  /** when to act on a pending schedule: renewLead before its expiry, or at its expiry once its renewals are used up */
  const renewAt = (expiresAt: string | null, count: number) =>
    expiresAt ? new Date(expiresAt).getTime() - (count >= maxRenewals ? 0 : renewLeadMs) : null;

  async function renewOrExpire(which: 'fund' | 'topup'): Promise<void> {
    const isFund = which === 'fund';
    const scheduleId = isFund ? task.scheduleId : task.topUpScheduleId;
    if (!scheduleId) return;
    const count = isFund ? renewals : topUpRenewals;
    const markExpired = async (reason: string) => {
      settle(which, 'expired');
      await commit('task.expired', { scheduleId, reason });
    };
    let executed: boolean;
    try {
      executed = await deleteSchedule(scheduleId, `renew${count}`);
    } catch {
      // the ledger cannot be reached or refuses: the schedule runs out as it stands
      if (count >= maxRenewals) return markExpired(`${which} schedule expired`);
      if (isFund) renewals = maxRenewals;
      else topUpRenewals = maxRenewals;
      return;
    }
    if (executed) {
      // the poster signed it on the ledger directly: the money is in escrow
      const amount = isFund ? price() : price() - escrowed();
      task.escrowedTinybars = (escrowed() + amount).toString();
      settle(which, 'funded');
      await commit(null);
      return;
    }
    if (count >= maxRenewals) return markExpired(`${which} schedule expired`);
    if (isFund) renewals++;
    else topUpRenewals++;
    let s: { scheduleId: string; expiresAt: string };
    try {
      s = await createSchedule(isFund ? price() : price() - escrowed(), which);
    } catch {
      // the old schedule is deleted and no new one could be made: nothing is pending any more
      return markExpired(`${which} schedule could not be renewed`);
    }
    if (isFund) {
      task.scheduleId = s.scheduleId;
      scheduleExpiresAt = s.expiresAt;
    } else {
      task.topUpScheduleId = s.scheduleId;
      topUpExpiresAt = s.expiresAt;
    }
    await commit(null);
  }

  while (!terminal()) {
    const deadlineAt = task.deadline ? new Date(task.deadline).getTime() : null;
    const times = [renewAt(scheduleExpiresAt, renewals), renewAt(topUpExpiresAt, topUpRenewals), deadlineAt].filter((x): x is number => x !== null);
    const next = times.length > 0 ? Math.min(...times) : null;
    const seen = version;
    const wait = next === null ? undefined : Math.max(1, next - Date.now());
    await condition(() => terminal() || version !== seen || (historyLarge() && !busy), wait);
    if (terminal()) break;
    if (historyLarge() && !busy) {
      await condition(() => allHandlersFinished() && !busy);
      const next: Carried = { task: { ...task }, seq, renewals, scheduleExpiresAt, topUpExpiresAt, topUpRenewals, ops };
      return continueAsNew<typeof taskLifecycle>({ task: input.task, timings: input.timings, carried: next });
    }
    const now = Date.now();
    if (deadlineAt !== null && now >= deadlineAt) {
      await exclusive(async () => {
        if (!terminal()) await cancelNow('task.expired', 'deadline');
      });
      continue;
    }
    const fundDue = renewAt(scheduleExpiresAt, renewals);
    if (fundDue !== null && now >= fundDue) {
      if (task.escrowStatus === 'scheduled') await exclusive(() => renewOrExpire('fund'));
      else scheduleExpiresAt = null;
    }
    const topUpDue = renewAt(topUpExpiresAt, topUpRenewals);
    if (topUpDue !== null && now >= topUpDue) {
      if (task.topUpScheduleId) await exclusive(() => renewOrExpire('topup'));
      else topUpExpiresAt = null;
    }
  }
  await condition(allHandlersFinished);
  return { ...task };
}
