/**
 * The steps of a posted task (SPEC 3, 4.4a): claim, deliver, cancel, increase-reward, complete and
 * verify. Each checks what the API can check from the written task (the rules of domain/market.ts,
 * which the taskLifecycle workflow applies again), then runs the step's Update of the task's
 * workflow (api/market/updates.ts), which makes every side effect. Each answers the task after the
 * step, or throws WorkflowPending while it still runs (the error handler answers 202).
 *
 * The same party repeating claim, deliver (same result), complete or cancel after a lost answer gets
 * the step's outcome (the task once it is written, WorkflowPending while it runs), never a refusal.
 *
 * A private key (complete with escrow: posterPrivateKey) signs inside this process only (ScheduleSign
 * bytes, api/market/signing.ts) and is never logged, stored or handed to a workflow.
 */
import type { PrivateKey } from '@hashgraph/sdk';
import { requireOwnPrivateKey } from '../auth/ownKey.js';
import { ApiError } from '../errors.js';
import {
  completionRefusal,
  deliveryRefusal,
  escrowReleaseRefusal,
  increaseCapRefusal,
  pendingScheduleIds,
  repeatsStep,
  verifierRunDue,
  type RepeatableStep,
  type StepRequest,
  type TaskRecord,
} from '../../domain/market.js';
import { sha256Hex } from '../../domain/hash.js';
import { cancelUpdate, claimUpdate, completeUpdate, deliverUpdate, increaseRewardUpdate, verifyUpdate, type VerifyResult } from '../../workflows/contracts/taskLifecycle.js';
import { directPaymentBytes, type DirectPaymentFields } from './payment.js';
import { partyOf, requireMarketPassport } from './parties.js';
import { signScheduleSigns } from './signing.js';
import { loadTask, readTask, refuse, refuseEarly, runTaskUpdate } from './updates.js';
import type { Market } from './state.js';

/**
 * Runs a step's Update. With `repeat`, a refusal is checked against the written task once more: a
 * repeat of a step that committed meanwhile (the workflow may have ended since the task was read)
 * answers the task, like a repeat seen at first.
 */
async function runStep(market: Market, run: () => Promise<TaskRecord>, repeat?: { op: RepeatableStep; taskId: string; req: StepRequest }): Promise<TaskRecord> {
  try {
    return await run();
  } catch (err) {
    if (repeat && err instanceof ApiError) {
      const now = await loadTask(market, repeat.taskId);
      if (repeatsStep(repeat.op, now, repeat.req)) return now;
    }
    throw err;
  }
}

/*
 * A repeat of a step the task has taken (a retry whose answer was lost: claim by its claimer,
 * deliver of the same result, complete or cancel by the poster of a completed or cancelled task)
 * gets the task as written and nothing runs again. A repeat of the step the workflow is running now
 * passes the checks here (the written task is a step behind) and the workflow answers it.
 */

export async function claimTask(market: Market, taskId: string, claimerDid: string): Promise<TaskRecord> {
  const claimer = partyOf(market, claimerDid, 'claimerDid');
  const task = await loadTask(market, taskId);
  const req = { callerDid: claimerDid };
  if (repeatsStep('claim', task, req)) return task;
  refuseEarly('claim', task, claimerDid);
  await requireMarketPassport(market, claimer, 'claimer');
  return runStep(market, () => runTaskUpdate(market, task, claimUpdate, { claimerDid }), { op: 'claim', taskId: task.taskId, req });
}

export async function deliverTask(market: Market, taskId: string, body: { claimerDid: string; resultBody?: string; resultIpfs?: string }): Promise<TaskRecord> {
  partyOf(market, body.claimerDid, 'claimerDid');
  refuse(deliveryRefusal(body));
  const task = await loadTask(market, taskId);
  const req = { callerDid: body.claimerDid, resultBody: body.resultBody, resultIpfs: body.resultIpfs };
  if (repeatsStep('deliver', task, req)) return task;
  refuseEarly('deliver', task, body.claimerDid);
  const args = {
    claimerDid: body.claimerDid,
    ...(body.resultBody !== undefined ? { resultBody: body.resultBody, resultSha256: sha256Hex(body.resultBody) } : {}),
    ...(body.resultIpfs !== undefined ? { resultIpfs: body.resultIpfs } : {}),
  };
  return runStep(market, () => runTaskUpdate(market, task, deliverUpdate, args), { op: 'deliver', taskId: task.taskId, req });
}

export async function cancelTask(market: Market, taskId: string, body: { posterDid: string; reason?: string }): Promise<TaskRecord> {
  const task = await loadTask(market, taskId);
  const req = { callerDid: body.posterDid };
  if (repeatsStep('cancel', task, req)) return task;
  refuseEarly('cancel', task, body.posterDid);
  return runStep(market, () => runTaskUpdate(market, task, cancelUpdate, { posterDid: body.posterDid, reason: body.reason }), { op: 'cancel', taskId: task.taskId, req });
}

export async function increaseReward(market: Market, taskId: string, body: { posterDid: string; newPriceHbar: number }): Promise<TaskRecord> {
  const task = await loadTask(market, taskId);
  refuseEarly('increaseReward', task, body.posterDid);
  refuse(increaseCapRefusal(task, market.ctx.config.MARKET_REWARD_INCREASES_MAX));
  return runStep(market, () => runTaskUpdate(market, task, increaseRewardUpdate, body));
}

/**
 * Completes a delivered task. With escrow: posterPrivateKey (checked to be the poster's) signs the
 * * pending schedules here and the workflow releases the escrow (`provenKey`: the key a -with-key route
 * already proved, not proved again). Without escrow: the poster's signed
 * transfer (api/market/payment.ts directPaymentBytes) is what the workflow submits.
 */
export async function completeTask(market: Market, taskId: string, body: { posterDid: string } & DirectPaymentFields, provenKey?: PrivateKey): Promise<TaskRecord> {
  const poster = partyOf(market, body.posterDid, 'posterDid');
  const task = await loadTask(market, taskId);
  const req = { callerDid: body.posterDid };
  if (repeatsStep('complete', task, req)) return task;
  refuseEarly('complete', task, body.posterDid);
  const again = { op: 'complete' as const, taskId: task.taskId, req };
  if (task.escrow) {
    refuse(completionRefusal(task, { posterSignature: Boolean(body.posterPrivateKey), transfer: Boolean(body.txBytes || body.signature || body.publicKey) }));
    const key = provenKey ?? (await requireOwnPrivateKey(market.ledger.keys, poster, body.posterPrivateKey!, 'posterPrivateKey', 'poster'));
    const scheduleSigns = await signScheduleSigns(market, pendingScheduleIds(task), key);
    return runStep(
      market,
      async () => {
        // an escrow that cannot be released (its schedule expired unsigned): the refusal the workflow's validator gives
        refuse(escrowReleaseRefusal(task));
        return runTaskUpdate(market, task, completeUpdate, { posterDid: body.posterDid, scheduleSigns });
      },
      again,
    );
  }
  const directTransferBytes = await directPaymentBytes(market, task, body, { provenKey });
  return runStep(market, () => runTaskUpdate(market, task, completeUpdate, { posterDid: body.posterDid, directTransferBytes }), again);
}

/**
 * Verify (open, anonymous: issue 20 item 4): a delivery's outcome is kept in the task and answered
 * again from memory, with no workflow call; only the first verify of a delivery (or one after an
 * inconclusive outcome, at most MARKET_VERIFY_RUNS_MAX runs, MARKET_VERIFY_RETRY_S apart) runs the
 * workflow's verify Update; verifies arriving while this process's Update is in flight share it (at most
 * one per process and task: Market.verifiesInFlight).
 */
export async function verifyTask(market: Market, taskId: string, callerDid: string | undefined): Promise<{ kept: TaskRecord } | { ran: VerifyResult; taskId: string }> {
  // memory first (no PostgreSQL per anonymous call); the last written step when memory is a step behind
  let task = await readTask(market, taskId);
  if (task.status !== 'delivered') task = await loadTask(market, taskId);
  refuseEarly('verify', task);
  const c = market.ctx.config;
  if (task.verification && !verifierRunDue(task.verification, Date.now(), c.MARKET_VERIFY_RUNS_MAX, c.MARKET_VERIFY_RETRY_S * 1000)) return { kept: task };
  let run = market.verifiesInFlight.get(task.taskId);
  if (!run) {
    const mine = runTaskUpdate(market, task, verifyUpdate, { callerDid });
    const clear = () => {
      if (market.verifiesInFlight.get(task.taskId) === mine) market.verifiesInFlight.delete(task.taskId);
    };
    mine.then(clear, clear);
    market.verifiesInFlight.set(task.taskId, mine);
    run = mine;
  }
  return { ran: await run, taskId: task.taskId };
}
