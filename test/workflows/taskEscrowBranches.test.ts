/**
 * The escrow branches of a task's workflow (workflows/taskLifecycle.ts, workflows/taskLifecycle/escrow.ts
 * and timers.ts) on a real worker and the dev server, with stubbed activities (issue 27 item 6): the
 * release, the refund, the lapse of an unsigned schedule, the funding and review windows, each
 * reached in about a second. The workflow is started through its contract (input bound to its id),
 * every Update argument is bound (boundUpdateArgument), and the step authorisation activity accepts.
 * The test asserts the ledger activities called, with their amounts and keys, and the task after.
 * The end-to-end runs against the ledger are in test/e2e/market*.test.ts.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountId, ScheduleId, ScheduleSignTransaction, TransactionId } from '@hashgraph/sdk';
import { v7 as uuidv7 } from 'uuid';
import { Context } from '@temporalio/activity';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure, type UpdateDefinition } from '@temporalio/common';
import type { Worker } from '@temporalio/worker';
import { postedTask, type TaskRecord } from '../../domain/market.js';
import { boundUpdateArgument, startWorkflow, workflowHandle } from '../../temporal/workflows.js';
import {
  cancelUpdate,
  claimUpdate,
  completeUpdate,
  deliverUpdate,
  fundUpdate,
  taskLifecycleContract,
  taskStateQuery,
  taskWorkflowId,
} from '../../workflows/contracts/taskLifecycle.js';
import { eventually } from '../support/eventually.js';
import { connectTestTemporal, type TestTemporal } from '../support/temporal.js';

const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'workflows', 'index.ts');

const OPERATOR = '0.0.2';
const NODE = '0.0.3';
const POSTER = 'did:hedera:local:0.0.1001';
const CLAIMER = 'did:hedera:local:0.0.2002';
/** 2 HBAR at a 2.5 % fee: 0.05 HBAR to the treasury, 1.95 HBAR to the claimer */
const PRICE = 200_000_000n;
const FEE = 5_000_000n;

type Call = { name: string; arg: Record<string, unknown> };
type Stub = (arg: Record<string, unknown>) => unknown;

/** The poster's ScheduleSign of a pending schedule, as the API builds it (paid by the operator, for our node). */
function scheduleSign(scheduleId: string) {
  const tx = new ScheduleSignTransaction()
    .setScheduleId(ScheduleId.fromString(scheduleId))
    .setTransactionId(TransactionId.generate(AccountId.fromString(OPERATOR)))
    .setNodeAccountIds([AccountId.fromString(NODE)])
    .freeze();
  return { scheduleId, signedBytes: Buffer.from(tx.toBytes()).toString('base64') };
}

describe('task escrow branches (stubbed activities)', () => {
  let t: TestTemporal;
  let worker: Worker;
  let running: Promise<void>;
  /** the activities each workflow called, by workflow id (workflows of earlier tests may still be running) */
  const calls = new Map<string, Call[]>();
  /** per-workflow overrides of the stubs */
  const overrides = new Map<string, Record<string, Stub>>();
  let schedules = 8000;

  const defaults: Record<string, Stub> = {
    useStepAuthorisationOnce: () => undefined,
    createEscrowSchedule: () => ({ scheduleId: `0.0.${++schedules}`, transactionId: `create-tx-${schedules}` }),
    deleteEscrowSchedule: () => ({ executed: false }),
    submitScheduleSign: (arg) => ({ transactionId: `sign-tx-${String(arg.scheduleId)}`, executed: true }),
    payoutEscrow: () => ({ transactionId: 'payout-tx' }),
    refundEscrow: () => ({ transactionId: 'refund-tx' }),
    publishTaskMessage: () => ({ transactionId: 'message-tx', sequenceNumber: 1 }),
    projectTask: () => ({ written: true }),
  };

  beforeAll(async () => {
    t = await connectTestTemporal('escrow');
    const activities = Object.fromEntries(
      Object.keys(defaults).map((name) => [
        name,
        async (arg: Record<string, unknown>) => {
          const wfId = Context.current().info.workflowExecution?.workflowId ?? '(none)';
          if (!calls.has(wfId)) calls.set(wfId, []);
          calls.get(wfId)!.push({ name, arg });
          return (overrides.get(wfId)?.[name] ?? defaults[name])(arg);
        },
      ]),
    );
    worker = await t.createWorker({ workflowsPath, activities });
    running = worker.run();
  }, 120_000);
  afterAll(async () => {
    if (worker) {
      worker.shutdown();
      await running;
    }
    await t?.close();
  });

  /** Posts an escrow task through the contract (its input bound to task:{taskId}) and waits until its schedule exists. */
  async function post(fields: Partial<TaskRecord> = {}, timings = {}, stubs: Record<string, Stub> = {}) {
    const taskId = uuidv7();
    const workflowId = taskWorkflowId(taskId);
    overrides.set(workflowId, stubs);
    const task = postedTask(
      {
        taskId, title: 'escrow branch', description: '', priceHbar: 2, priceTinybars: PRICE.toString(), capabilities: [], posterDid: POSTER,
        verifierType: 'none', verifierConfig: null, deadline: null, feeBps: 250, escrow: true, ...fields,
      },
      new Date().toISOString(),
    );
    await startWorkflow(t.client, taskLifecycleContract, {
      task,
      ledger: { operator: OPERATOR, treasury: '0.0.98', nodeAccountIds: [NODE] },
      timings: { retryInitialMs: 10, retryMaximumMs: 20, ledgerMaxAttempts: 2, activityTimeoutMs: 10_000, ...timings },
    }, { taskQueue: t.taskQueue, workflowId });
    const handle = workflowHandle(t.client, taskLifecycleContract, workflowId);
    // the posting holds the step mutex: an Update waits for it, a query sees the task as it is
    const posted = await eventually(() => handle.query(taskStateQuery), (s) => s.scheduleId !== null);
    /** runs an Update with its argument bound to this workflow, the Update's name and a fresh nonce */
    const update = <A extends object>(def: UpdateDefinition<TaskRecord, [A]>, arg: A) => handle.executeUpdate(def, { args: [boundUpdateArgument(handle, def, arg)] });
    const called = () => calls.get(workflowId) ?? [];
    const named = (name: string) => called().filter((c) => c.name === name).map((c) => c.arg);
    const messages = () => named('publishTaskMessage').map((a) => a.message as { type: string; reason?: string; status: string; escrowStatus: string });
    return { taskId, workflowId, handle, posted, update, called, named, messages };
  }

  it('posting creates the funding schedule for the price, from the poster, after the start is authorised', async () => {
    const { workflowId, posted, called, named, messages } = await post();
    const names = called().map((c) => c.name);
    expect(names.slice(0, 2)).toEqual(['useStepAuthorisationOnce', 'createEscrowSchedule']);
    expect(named('useStepAuthorisationOnce')[0]).toMatchObject({ message: 'taskLifecycle', callerDid: POSTER, step: 'start' });
    expect(named('createEscrowSchedule')[0]).toMatchObject({ taskId: posted.taskId, posterAccountId: '0.0.1001', amountTinybars: PRICE.toString(), purpose: 'fund' });
    expect(String(named('createEscrowSchedule')[0].idempotencyKey)).toMatch(new RegExp(`^${workflowId}/o1-fund-create$`));
    expect(posted).toMatchObject({ status: 'posted', escrowStatus: 'scheduled', escrowedTinybars: '0' });
    expect(posted.scheduleId).toMatch(/^0\.0\.8\d{3}$/);
    // the posting's topic message follows the schedule in the same workflow task or the next one
    await eventually(async () => messages().length, (n) => n > 0);
    expect(messages().map((m) => m.type)).toEqual(['task.posted']);
  });

  it('release: funded, claimed, delivered, completed: the escrow pays the claimer the price less the fee, and the treasury the fee', async () => {
    const { workflowId, handle, posted, update, named, messages } = await post();
    const funded = await update(fundUpdate, { posterDid: POSTER, scheduleSigns: [scheduleSign(posted.scheduleId!)] });
    expect(funded).toMatchObject({ escrowStatus: 'funded', escrowedTinybars: PRICE.toString() });
    expect(named('submitScheduleSign')[0]).toMatchObject({ scheduleId: posted.scheduleId, posterAccountId: '0.0.1001', pendingScheduleIds: [posted.scheduleId] });
    await update(claimUpdate, { claimerDid: CLAIMER });
    await update(deliverUpdate, { claimerDid: CLAIMER, resultBody: 'done' });
    const completed = await update(completeUpdate, { posterDid: POSTER });
    expect(completed).toMatchObject({ status: 'completed', escrowStatus: 'released', escrowedTinybars: '0', paymentTxId: 'payout-tx', refundTxId: null });
    expect(named('payoutEscrow')).toEqual([
      { idempotencyKey: `${workflowId}/payout`, taskId: posted.taskId, claimerAccountId: '0.0.2002', claimerTinybars: (PRICE - FEE).toString(), feeTinybars: FEE.toString() },
    ]);
    // the money-moving step used its authorisation row first
    expect(named('useStepAuthorisationOnce').map((a) => a.message)).toEqual(['taskLifecycle', 'complete']);
    expect(named('refundEscrow')).toEqual([]);
    expect(messages().map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.delivered', 'task.completed']);
    await expect(handle.result()).resolves.toMatchObject({ status: 'completed', escrowStatus: 'released' });
  });

  it('release of a still-scheduled escrow: complete signs the pending schedule first, then pays out', async () => {
    const { handle, posted, update, called } = await post();
    await update(claimUpdate, { claimerDid: CLAIMER });
    await update(deliverUpdate, { claimerDid: CLAIMER, resultBody: 'done' });
    // without the poster's signature of the pending schedule, completion is refused before anything moves
    const refused = await update(completeUpdate, { posterDid: POSTER }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(called().map((c) => c.name)).not.toContain('payoutEscrow');
    const completed = await update(completeUpdate, { posterDid: POSTER, scheduleSigns: [scheduleSign(posted.scheduleId!)] });
    expect(completed).toMatchObject({ status: 'completed', escrowStatus: 'released', paymentTxId: 'payout-tx' });
    const order = called().map((c) => c.name).filter((n) => n === 'submitScheduleSign' || n === 'payoutEscrow');
    expect(order).toEqual(['submitScheduleSign', 'payoutEscrow']);
    await expect(handle.result()).resolves.toMatchObject({ status: 'completed' });
  });

  it('refund: cancelling a funded escrow pays the whole escrow back to the poster under the task\'s refund key', async () => {
    const { workflowId, handle, posted, update, named, messages } = await post();
    await update(fundUpdate, { posterDid: POSTER, scheduleSigns: [scheduleSign(posted.scheduleId!)] });
    await update(claimUpdate, { claimerDid: CLAIMER });
    const cancelled = await update(cancelUpdate, { posterDid: POSTER, reason: 'changed my mind' });
    expect(cancelled).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded', escrowedTinybars: '0', refundTxId: 'refund-tx', paymentTxId: null });
    expect(named('refundEscrow')).toEqual([{ idempotencyKey: `${workflowId}/refund`, taskId: posted.taskId, posterAccountId: '0.0.1001', amountTinybars: PRICE.toString() }]);
    expect(named('payoutEscrow')).toEqual([]);
    // a funded escrow has no schedule left to delete
    expect(named('deleteEscrowSchedule')).toEqual([]);
    expect(named('useStepAuthorisationOnce').map((a) => a.message)).toEqual(['taskLifecycle', 'cancel']);
    expect(messages().at(-1)).toMatchObject({ type: 'task.cancelled', reason: 'changed my mind', status: 'cancelled', escrowStatus: 'refunded' });
    await expect(handle.result()).resolves.toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });
  });

  it('cancelling a scheduled escrow deletes its schedule and refunds nothing', async () => {
    const { handle, posted, update, named } = await post();
    const cancelled = await update(cancelUpdate, { posterDid: POSTER });
    expect(cancelled).toMatchObject({ status: 'cancelled', escrowStatus: 'cancelled', refundTxId: null });
    expect(named('deleteEscrowSchedule')).toHaveLength(1);
    expect(named('deleteEscrowSchedule')[0]).toMatchObject({ scheduleId: posted.scheduleId });
    expect(named('refundEscrow')).toEqual([]);
    await expect(handle.result()).resolves.toMatchObject({ status: 'cancelled', escrowStatus: 'cancelled' });
  });

  it('cancelling a schedule the poster signed on the ledger meanwhile refunds what it moved', async () => {
    const { workflowId, posted, update, named } = await post({}, {}, { deleteEscrowSchedule: () => ({ executed: true }) });
    const cancelled = await update(cancelUpdate, { posterDid: POSTER });
    expect(cancelled).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded', refundTxId: 'refund-tx' });
    expect(named('deleteEscrowSchedule')[0]).toMatchObject({ scheduleId: posted.scheduleId });
    expect(named('refundEscrow')).toEqual([{ idempotencyKey: `${workflowId}/refund`, taskId: posted.taskId, posterAccountId: '0.0.1001', amountTinybars: PRICE.toString() }]);
  });

  it('an unsigned schedule lapses at its expiry (no renewal): escrow expired, the task stays posted', async () => {
    const { handle, posted, update, named, messages } = await post({}, { scheduleLifetimeMs: 1_000 });
    const lapsed = await eventually(() => handle.query(taskStateQuery), (s) => s.escrowStatus === 'expired', 15_000);
    expect(lapsed).toMatchObject({ status: 'posted', escrowStatus: 'expired', escrowedTinybars: '0' });
    // checked once on the ledger (it may have run) and not renewed: one schedule only
    expect(named('deleteEscrowSchedule')).toHaveLength(1);
    expect(named('deleteEscrowSchedule')[0]).toMatchObject({ scheduleId: posted.scheduleId });
    expect(String(named('deleteEscrowSchedule')[0].idempotencyKey)).toMatch(/-delete-renew0-/);
    expect(named('createEscrowSchedule')).toHaveLength(1);
    // the step's topic message may follow the state the query shows
    await eventually(async () => messages().at(-1)?.reason, (r) => r === 'fund schedule expired');
    expect(messages().at(-1)).toMatchObject({ type: 'task.expired', reason: 'fund schedule expired', escrowStatus: 'expired' });
    // the task ends when the poster cancels: nothing held, nothing refunded
    const cancelled = await update(cancelUpdate, { posterDid: POSTER });
    expect(cancelled).toMatchObject({ status: 'cancelled', escrowStatus: 'expired' });
    expect(named('refundEscrow')).toEqual([]);
  });

  it('a schedule found executed at its expiry (signed on the ledger directly) funds the escrow', async () => {
    const { handle, update, named } = await post({}, { scheduleLifetimeMs: 1_000 }, { deleteEscrowSchedule: () => ({ executed: true }) });
    const funded = await eventually(() => handle.query(taskStateQuery), (s) => s.escrowStatus === 'funded', 15_000);
    expect(funded).toMatchObject({ status: 'posted', escrowStatus: 'funded', escrowedTinybars: PRICE.toString(), fundingEndsAt: null });
    expect(named('createEscrowSchedule')).toHaveLength(1);
    await update(cancelUpdate, { posterDid: POSTER });
    expect(named('refundEscrow')).toHaveLength(1);
  });

  it('the funding window: an escrow still unfunded at its end cancels the task and deletes the schedule', async () => {
    const { workflowId, handle, posted, named, messages } = await post({ fundingWindowSeconds: 1 });
    expect(posted.fundingEndsAt).not.toBeNull();
    const ended = await handle.result();
    expect(ended).toMatchObject({ status: 'cancelled', escrowStatus: 'cancelled', refundTxId: null, fundingEndsAt: null });
    expect(named('deleteEscrowSchedule')).toHaveLength(1);
    expect(named('deleteEscrowSchedule')[0]).toMatchObject({ scheduleId: posted.scheduleId });
    expect(String(named('deleteEscrowSchedule')[0].idempotencyKey)).toMatch(new RegExp(`^${workflowId}/o\\d+-delete-fund-`));
    expect(named('refundEscrow')).toEqual([]);
    // the step's topic message may follow the state the query shows
    await eventually(async () => messages().at(-1)?.reason, (r) => r === 'funding window');
    expect(messages().at(-1)).toMatchObject({ type: 'task.expired', reason: 'funding window', status: 'cancelled' });
  });

  it('the review window: a delivered, funded task the poster leaves alone is paid to the claimer', async () => {
    const { workflowId, handle, posted, update, named, messages } = await post({ reviewWindowSeconds: 1 });
    await update(fundUpdate, { posterDid: POSTER, scheduleSigns: [scheduleSign(posted.scheduleId!)] });
    await update(claimUpdate, { claimerDid: CLAIMER });
    await update(deliverUpdate, { claimerDid: CLAIMER, resultBody: 'done' });
    const ended = await handle.result();
    expect(ended).toMatchObject({ status: 'completed', escrowStatus: 'released', paymentTxId: 'payout-tx' });
    expect(named('payoutEscrow')).toEqual([
      { idempotencyKey: `${workflowId}/payout`, taskId: posted.taskId, claimerAccountId: '0.0.2002', claimerTinybars: (PRICE - FEE).toString(), feeTinybars: FEE.toString() },
    ]);
    // no one completed it: no authorisation beyond the start's
    expect(named('useStepAuthorisationOnce').map((a) => a.message)).toEqual(['taskLifecycle']);
    // the step's topic message may follow the state the query shows
    await eventually(async () => messages().at(-1)?.reason, (r) => r === 'review window');
    expect(messages().at(-1)).toMatchObject({ type: 'task.completed', reason: 'review window' });
  });

  it('a step the service did not authorise moves nothing', async () => {
    const { handle, posted, update, named } = await post({}, {}, {
      useStepAuthorisationOnce: (arg) => {
        if (arg.message === 'cancel') throw ApplicationFailure.nonRetryable('no authorisation row', 'StepNotAuthorised');
        return undefined;
      },
    });
    await update(fundUpdate, { posterDid: POSTER, scheduleSigns: [scheduleSign(posted.scheduleId!)] });
    const refused = await update(cancelUpdate, { posterDid: POSTER }).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(named('refundEscrow')).toEqual([]);
    await expect(handle.query(taskStateQuery)).resolves.toMatchObject({ status: 'posted', escrowStatus: 'funded', escrowedTinybars: PRICE.toString() });
    await handle.terminate('test over');
  });
});
