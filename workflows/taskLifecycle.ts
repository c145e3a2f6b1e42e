/**
 * taskLifecycle (id task:{taskId}): one long-running workflow per marketplace task (SPEC 3; DESIGN.md
 * sections 5, 6 "Marketplace escrow", 10 "Marketplace"). Its interface is its contract,
 * workflows/contracts/taskLifecycle.ts.
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
 *   promises     (patched ESCROW_PROMISES_PATCH; DESIGN 11 "Escrow promises") a claim with no delivery
 *                lapses back to posted after the claim window (task.expired, reason "claim window"); a
 *                delivered escrow task the poster neither completes nor cancels within the review window
 *                is paid to the claimer from escrow as a completion would be (task.completed, reason
 *                "review window"); an escrow task still unfunded at the end of the funding window is
 *                cancelled (task.expired, reason "funding window"), and its schedule renewals end with
 *                it; the deadline no longer cancels a delivered task; verify runs outside the step mutex
 *                and reuses the delivery's outcome (only a changed outcome goes to the topic)
 *
 * Each step runs alone (a small mutex), publishes its marketplace topic message and writes the
 * projection (+ NOTIFY task_changed), and upserts the search attributes. Validators refuse with a
 * TaskRefusal ApplicationFailure before anything runs; handlers check again under the mutex. The
 * same party repeating claim, deliver (same result), complete or cancel gets the task after the step
 * (waiting for it when it is still running), never a refusal and never a second run.
 * Continue-as-new carries the state when the history grows.
 *
 * This file is the lifecycle itself (the handlers and posting); its parts live in taskLifecycle/:
 *   run.ts        the run's state, its activities, the commit that ends each step, patch ids
 *   stepMutex.ts  the step mutex and dedup (exclusive, repeats, in-flight refusals)
 *   checks.ts     the refusals of each step (the rules of domain/market.ts and domain/ledgerTransaction.ts)
 *   escrow.ts     the escrow schedules (create, delete, sign, unwind, raise, renew), payout and refund
 *   timers.ts     renewals, the deadline, the claim, review and funding windows, continue-as-new
 *   verify.ts     the verifier runs
 *   refusals.ts   the TaskRefusal failures
 *   authority.ts  who may move the task's money: bound arguments, authorisation rows (issue 26)
 */
import { ApplicationFailure, allHandlersFinished, condition, continueAsNew, patched, setHandler } from '@temporalio/workflow';
import { DEFAULT_CLAIM_WINDOW_S, DEFAULT_REVIEW_WINDOW_S, DEFAULT_REWARD_INCREASES_MAX, hbarToTinybars, tinybarsToHbar, type StepRequest, type TaskRecord } from '../domain/market.js';
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
  type TaskLifecycleInput,
} from './contracts/taskLifecycle.js';
import { carriedOf, committer, ESCROW_PROMISES_PATCH, isoIn, nowIso, scheduleTimings, searchAttributes, startRun, taskActivities } from './taskLifecycle/run.js';
import { stepMutex } from './taskLifecycle/stepMutex.js';
import { stepChecks } from './taskLifecycle/checks.js';
import { escrowOf } from './taskLifecycle/escrow.js';
import { runTimers } from './taskLifecycle/timers.js';
import { verification } from './taskLifecycle/verify.js';
import { taskAuthority } from './taskLifecycle/authority.js';
import { requireBoundStart } from './binding.js';

export * from './contracts/taskLifecycle.js';
export {
  ClaimerDidKey,
  ESCROW_PAYS_ESCROWED_PATCH,
  ESCROW_PROMISES_PATCH,
  EscrowStatusKey,
  PosterDidKey,
  PriceHbarKey,
  REPEATED_STEP_PATCH,
  TaskStatusKey,
} from './taskLifecycle/run.js';

export async function taskLifecycle(input: TaskLifecycleInput): Promise<TaskRecord> {
  // an input written for another workflow, or carried state a client sent, starts nothing (issue 26)
  requireBoundStart(input, 'taskLifecycle');
  const t = input.timings ?? {};
  const activities = taskActivities(t);
  /** the escrow promises (see the header); histories recorded before them replay without */
  const promises = patched(ESCROW_PROMISES_PATCH);
  const run = startRun(input);
  const task = run.task;
  const carried = input.carried;
  const commit = committer(run, activities.durable);
  const { exclusive, repeats, repeated, refuseInFlight, tracked } = stepMutex(run);
  const { check, checkDelivery, checkIncrease, checkScheduleSigns, checkComplete, validateComplete } = stepChecks(run, {
    promises,
    rewardIncreasesMax: t.rewardIncreasesMax ?? DEFAULT_REWARD_INCREASES_MAX,
  });
  const timings = scheduleTimings(input, promises);
  const escrow = escrowOf(run, activities, commit, timings);
  const verify = verification(run, activities.verifier, commit, exclusive, t);
  const authority = taskAuthority(run, activities.durable, carried?.nonces);
  const claimWindowMs = () => (task.claimWindowSeconds ?? DEFAULT_CLAIM_WINDOW_S) * 1000;
  const reviewWindowMs = () => (task.reviewWindowSeconds ?? DEFAULT_REVIEW_WINDOW_S) * 1000;

  async function cancelNow(type: 'task.cancelled' | 'task.expired', reason?: string): Promise<void> {
    await escrow.unwind();
    task.status = 'cancelled';
    await commit(type, { refundTxId: task.refundTxId, scheduleId: task.scheduleId, ...(reason ? { reason } : {}) });
  }

  // ---------------------------------------------------------------- handlers

  setHandler(taskStateQuery, () => ({ ...task }));

  setHandler(syncUpdate, () => exclusive(async () => ({ ...task })));

  setHandler(
    fundUpdate,
    (args) => {
      authority.useBound(args, 'fund');
      return exclusive(async () => {
        if (args.posterDid !== task.posterDid) check('cancel', args.posterDid);
        if (task.escrowStatus !== 'scheduled' && !task.topUpScheduleId) return { ...task };
        await escrow.signPending(args.scheduleSigns, 'The escrow could not be funded');
        await commit(null);
        return { ...task };
      });
    },
    {
      validator: (args) => {
        authority.checkBound(args, 'fund');
        if (args.posterDid !== task.posterDid) check('cancel', args.posterDid);
        if (escrow.pending().length > 0) checkScheduleSigns(args.scheduleSigns);
      },
    },
  );

  setHandler(
    claimUpdate,
    (args) => {
      authority.useBound(args, 'claim');
      return tracked('claim', { callerDid: args.claimerDid }, () => exclusive(async () => {
          if (repeated('claim', { callerDid: args.claimerDid })) return { ...task };
          check('claim', args.claimerDid);
          task.status = 'claimed';
          task.claimerDid = args.claimerDid;
          if (promises) task.claimEndsAt = isoIn(claimWindowMs());
          await commit('task.claimed', { claimerDid: args.claimerDid });
          return { ...task };
        }));
    },
    {
      validator: (args) => {
        authority.checkBound(args, 'claim');
        refuseInFlight('claim', { callerDid: args.claimerDid });
        if (!repeats('claim', { callerDid: args.claimerDid })) check('claim', args.claimerDid);
      },
    },
  );

  const deliveryOf = (args: { claimerDid: string; resultBody?: string; resultIpfs?: string }): StepRequest => ({
    callerDid: args.claimerDid,
    resultBody: args.resultBody,
    resultIpfs: args.resultIpfs,
  });

  setHandler(
    deliverUpdate,
    (args) => {
      authority.useBound(args, 'deliver');
      return tracked('deliver', deliveryOf(args), () => exclusive(async () => {
          if (repeated('deliver', deliveryOf(args))) return { ...task };
          check('deliver', args.claimerDid);
          checkDelivery(args);
          task.status = 'delivered';
          task.resultBody = args.resultBody ?? null;
          task.resultIpfs = args.resultIpfs ?? null;
          task.resultSha256 = args.resultSha256 ?? null;
          task.deliveredAt = nowIso();
          if (promises) {
            task.claimEndsAt = null;
            if (task.escrow) task.reviewEndsAt = isoIn(reviewWindowMs());
          }
          await commit('task.delivered', { claimerDid: task.claimerDid, resultSha256: task.resultSha256, resultIpfs: task.resultIpfs });
          return { ...task };
        }));
    },
    {
      validator: (args) => {
        authority.checkBound(args, 'deliver');
        refuseInFlight('deliver', deliveryOf(args));
        if (repeats('deliver', deliveryOf(args))) return;
        check('deliver', args.claimerDid);
        checkDelivery(args);
      },
    },
  );

  setHandler(
    verifyUpdate,
    (args) => {
      authority.useBound(args, 'verify');
      return promises ? verify.verifyOnce() : verify.verifyEach();
    },
    {
      validator: (args) => {
        authority.checkBound(args, 'verify');
        verify.check();
      },
    },
  );

  setHandler(
    completeUpdate,
    (args) => {
      authority.useBound(args, 'complete');
      return tracked('complete', { callerDid: args.posterDid }, () => exclusive(async () => {
          if (repeated('complete', { callerDid: args.posterDid })) return { ...task };
          checkComplete(args);
          await authority.authorise(args, 'complete', args.posterDid);
          if (task.escrow) await escrow.release(args.scheduleSigns ?? []);
          else await escrow.payDirectly(args.directTransferBytes!);
          task.status = 'completed';
          await commit('task.completed', { claimerDid: task.claimerDid, paymentTxId: task.paymentTxId });
          return { ...task };
        }));
    },
    {
      validator: (args) => {
        authority.checkBound(args, 'complete');
        refuseInFlight('complete', { callerDid: args.posterDid });
        if (!repeats('complete', { callerDid: args.posterDid })) validateComplete(args);
      },
    },
  );

  setHandler(
    cancelUpdate,
    (args) => {
      authority.useBound(args, 'cancel');
      return tracked('cancel', { callerDid: args.posterDid }, () => exclusive(async () => {
          if (repeated('cancel', { callerDid: args.posterDid })) return { ...task };
          check('cancel', args.posterDid);
          await authority.authorise(args, 'cancel', args.posterDid);
          await cancelNow('task.cancelled', args.reason);
          return { ...task };
        }));
    },
    {
      validator: (args) => {
        authority.checkBound(args, 'cancel');
        refuseInFlight('cancel', { callerDid: args.posterDid });
        if (!repeats('cancel', { callerDid: args.posterDid })) check('cancel', args.posterDid);
      },
    },
  );

  setHandler(
    increaseRewardUpdate,
    (args) => {
      authority.useBound(args, 'increaseReward');
      return exclusive(async () => {
          checkIncrease(args);
          await authority.authorise(args, 'increaseReward', args.posterDid);
          const newPrice = hbarToTinybars(args.newPriceHbar)!;
          const oldPriceHbar = task.priceHbar;
          if (promises) task.rewardIncreases = (task.rewardIncreases ?? 0) + 1;
          if (task.escrow) await escrow.raise(newPrice);
          task.priceTinybars = newPrice.toString();
          task.priceHbar = tinybarsToHbar(newPrice);
          await commit('task.reward_increased', { priceHbar: task.priceHbar, scheduleId: task.scheduleId, reason: `from ${oldPriceHbar}` });
          return { ...task };
        });
    },
    {
      validator: (args) => {
        authority.checkBound(args, 'increaseReward');
        checkIncrease(args);
      },
    },
  );

  // ---------------------------------------------------------------- posting

  if (!carried) {
    // the posting acts on the row the API wrote when it checked the poster (issue 26); refused, nothing is written
    await authority.authoriseStart(input, task.posterDid);
    try {
      if (task.escrow) {
        const s = await escrow.create(BigInt(task.priceTinybars), 'fund');
        task.scheduleId = s.scheduleId;
        run.scheduleExpiresAt = s.expiresAt;
        task.escrowStatus = 'scheduled';
        if (promises) task.fundingEndsAt = isoIn(timings.fundingWindowMs);
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
      run.busy = false;
      return { ...task };
    } finally {
      run.busy = false;
      run.version++;
    }
  } else {
    searchAttributes(task);
  }

  // ---------------------------------------------------------------- timers and continue-as-new

  const outcome = await runTimers({ run, commit, exclusive, escrow, cancel: cancelNow, promises, continueAsNewAfterEvents: t.continueAsNewAfterEvents });
  if (outcome === 'continue') {
    return continueAsNew<typeof taskLifecycle>({
      task: input.task,
      timings: input.timings,
      ...(run.facts ? { ledger: run.facts } : {}),
      ...(input.binding ? { binding: input.binding } : {}),
      carried: carriedOf(run, authority.carriedNonces()),
    });
  }
  await condition(allHandlersFinished);
  return { ...task };
}
