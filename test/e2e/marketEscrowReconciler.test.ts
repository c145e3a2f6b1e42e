// The escrow reconciler (issue 26 item 4; DESIGN 12 "Money integrity II") on a real stack: localnet
// escrow schedules and transfers, taskLifecycle workflows on the Temporal dev server, terminated with
// the Temporal client as an operator or an intruder would. Before the reconciler such a task's
// escrow stayed in the escrow account for ever (every step answers "takes no more steps"). Now a pass
// (its Temporal Schedule, or the workflow run directly) refunds the poster under the task's own
// refund key, pays a recorded completion under its payout key, deletes a schedule not yet executed,
// and says so in the projection and on the marketplace topic. Every amount is read from the ledger;
// passes run again pay nothing twice (also when the projection is put back to its stranded state).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Worker } from '@temporalio/worker';
import { payoutOf, parseTaskMessage, type TaskMessage } from '../../domain/market.js';
import { createEscrowReconcilerActivities } from '../../activities/ledger/marketEscrowReconciler.js';
import { createMarketLedgerActivities } from '../../activities/ledger/market.js';
import { taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { escrowReconcilerContract, type EscrowReconcileAction, type EscrowReconcilerResult } from '../../workflows/contracts/escrowReconciler.js';
import { deleteEscrowReconciler, ensureEscrowReconciler } from '../../worker/escrowReconciler.js';
import { startWorkflow } from '../../temporal/workflows.js';
import { findSubmission } from '../../db/queries/ledgerSubmissions.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { buyPassport, getJson, postJson, recordFixture, startPassportStack, tinybarBalance, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;
/** the reconciler's grace in this file: a closed workflow is settled a second after it closed */
const GRACE_MS = 1_000;

describe('the escrow reconciler settles tasks whose workflow is closed', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let claimer: TestAgent;
  let escrow: string;
  let treasury: string;
  let feeBps: number;
  let worker: { worker: Worker; running: Promise<void> };
  let passes = 0;

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => postJson(ps, path, body, headers);
  const signed = async (path: string, signer: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, signer));
  const balances = async () => ({
    poster: await tinybarBalance(ps, poster.accountId),
    claimer: await tinybarBalance(ps, claimer.accountId),
    escrow: await tinybarBalance(ps, escrow),
    treasury: await tinybarBalance(ps, treasury),
  });
  const taskOf = async (taskId: string) => (await getJson(ps, `/market/tasks/${taskId}`)).body;
  const waitTask = async (taskId: string, pred: (t: Json) => boolean, what: string, timeoutMs = 90_000): Promise<Json> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const t = await taskOf(taskId);
      if (pred(t)) return t;
      if (Date.now() > end) throw new Error(`task ${taskId}: ${what} not reached: ${JSON.stringify(t)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  };
  const messagesOf = async (taskId: string): Promise<TaskMessage[]> => {
    const raw = await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.marketplace, { limit: 10_000 });
    return raw.map((m) => parseTaskMessage(Buffer.from(m.message, 'base64').toString('utf8'))).filter((m): m is TaskMessage => m !== null && m.taskId === taskId);
  };
  const postFunded = async (priceHbar: number) => {
    const r = await post('/market/tasks/signed', { posterDid: poster.did, title: 'Stranded escrow', priceHbar, posterPrivateKey: poster.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ escrowStatus: 'funded' });
    return String(r.body.taskId);
  };
  const claim = async (taskId: string) => {
    const c = await signed(`/market/tasks/${taskId}/claim`, claimer, { claimerDid: claimer.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
  };
  const deliver = async (taskId: string) => {
    const d = await signed(`/market/tasks/${taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'done' });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    return d.body;
  };
  /** terminates the task's workflow as an operator (or an intruder) can with the Temporal client */
  const terminate = (taskId: string) => ps.t.client.workflow.getHandle(taskWorkflowId(taskId)).terminate('test: the task workflow is stopped from outside');
  /** one reconciler pass, run directly (its workflow id kept for the replay fixture) */
  const pass = async (graceMs = GRACE_MS, o: { sample?: number } = {}): Promise<EscrowReconcilerResult & { workflowId: string }> => {
    const workflowId = `${ps.t.taskQueue}/escrow-pass-${++passes}`;
    const h = await startWorkflow(ps.t.client, escrowReconcilerContract, { graceMs, ...o, timings: ps.state.timings }, { taskQueue: ps.t.taskQueue, workflowId });
    return { ...(await h.result()), workflowId };
  };
  /** passes until one acts on the task (its workflow closed a moment ago: the grace must pass first) */
  const passActingOn = async (taskId: string, o: { sample?: number } = {}): Promise<{ action: EscrowReconcileAction; workflowId: string }> => {
    const end = Date.now() + 60_000;
    for (;;) {
      const r = await pass(GRACE_MS, o);
      const action = r.actions.find((a) => a.taskId === taskId && a.action !== 'skipped');
      if (action) return { action, workflowId: r.workflowId };
      if (Date.now() > end) throw new Error(`no pass acted on ${taskId}: ${JSON.stringify(r)}`);
      await new Promise((res) => setTimeout(res, 500));
    }
  };
  /** the reconciler's activities with this file's grace (a worker's own ESCROW_RECONCILE_GRACE_S is the floor of any pass's input) */
  const reconcilerActivities = () => createEscrowReconcilerActivities({ sql: ps.sql, ledger: ps.ledgerDeps, bounds: { graceMs: GRACE_MS, maxPerPass: 20, samplePerPass: 20 } });
  /**
   * Runs `step` (a poster's step answered 202) on a worker whose `activity` (payoutEscrow or refundEscrow)
   * makes the real escrow transfer and then never answers, and terminates the task's workflow once the
   * transfer is made: the workflow stopped after its payout or refund and before it wrote the outcome.
   */
  const stopAfterTransfer = async (taskId: string, activity: 'payoutEscrow' | 'refundEscrow', step: () => Promise<{ status: number; body: Json }>) => {
    const real = createMarketLedgerActivities({ sql: ps.sql, ledger: ps.ledgerDeps });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let made = false;
    worker.worker.shutdown();
    await worker.running;
    const stuck = await ps.startWorker({
      ...reconcilerActivities(),
      [activity]: async (input: never) => {
        const r = await (real[activity] as (i: never) => Promise<{ transactionId: string }>)(input);
        made = true;
        await gate;
        return r;
      },
    } as never);
    try {
      ps.app.market.settings.workflowWaitMs = 3_000;
      const r = await step();
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      const end = Date.now() + 60_000;
      while (!made && Date.now() < end) await new Promise((res) => setTimeout(res, 200));
      expect(made).toBe(true);
      await terminate(taskId);
    } finally {
      release();
      ps.app.market.settings.workflowWaitMs = 60_000;
      stuck.worker.shutdown();
      await stuck.running;
      worker = await ps.startWorker(reconcilerActivities() as never);
    }
  };
  const submissionsOf = async (key: string) => (await ps.sql<{ n: number }[]>`select count(*)::int as n from ledger_submissions where idempotency_key = ${key}`)[0].n;

  beforeAll(async () => {
    ps = await startPassportStack('escrowrecon');
    worker = await ps.startWorker(reconcilerActivities() as never);
    [poster, claimer] = ps.agents;
    for (const a of [poster, claimer]) {
      const r = await buyPassport(ps, a, { tier: 'gold' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    escrow = ps.stack.deployment.escrow;
    treasury = ps.stack.deployment.treasury;
    feeBps = Number(ps.stack.env.MARKET_FEE_BPS ?? 250);
    ps.app.market.settings.workflowWaitMs = 60_000;
  }, 240_000);
  afterAll(async () => {
    await deleteEscrowReconciler(ps.t.client, ps.t.taskQueue).catch(() => undefined);
    await ps?.stop();
  });

  it("terminated with its escrow funded: the schedule's pass refunds the poster exactly what was escrowed, once; the projection and the topic say so", async () => {
    const before = await balances();
    const taskId = await postFunded(2.5);
    await claim(taskId);
    const funded = await balances();
    expect(funded.poster - before.poster).toBe(-250_000_000n);
    expect(funded.escrow - before.escrow).toBe(250_000_000n);

    await terminate(taskId);
    // stranded: no step reaches the task any more
    const cancel = await signed(`/market/tasks/${taskId}/cancel`, poster, { posterDid: poster.did });
    expect(cancel.status, JSON.stringify(cancel.body)).toBe(400);
    expect(cancel.body.error).toMatch(/takes no more steps/);

    // the Temporal Schedule a worker creates, here every second
    await ensureEscrowReconciler(ps.t.client, { taskQueue: ps.t.taskQueue, everyMs: 1_000, graceMs: GRACE_MS, timings: ps.state.timings });
    let settled: Json;
    try {
      settled = await waitTask(taskId, (t) => t.status === 'cancelled', 'settled by the scheduled reconciler');
    } finally {
      await deleteEscrowReconciler(ps.t.client, ps.t.taskQueue);
    }
    expect(settled).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });
    expect(settled.refundTxId).toMatch(/^0\.0\.\d+@/);
    const after = await balances();
    expect(after.poster).toBe(before.poster); // the operator pays every fee: the poster gets back exactly the price
    expect(after.escrow).toBe(before.escrow);
    expect((await ps.stack.ledger.mirror.getTransaction(settled.refundTxId))?.result).toBe('SUCCESS');
    const last = (await messagesOf(taskId)).at(-1)!;
    expect(last).toMatchObject({ type: 'task.cancelled', status: 'cancelled', escrowStatus: 'refunded', refundTxId: settled.refundTxId });
    expect(last.reason).toMatch(/escrow reconciler: its workflow is terminated/);

    // more passes: nothing more is paid
    const again = await pass();
    expect(again.actions.filter((a) => a.taskId === taskId)).toEqual([]);
    // even with the projection put back to its stranded state, the refund key finds the refund made
    await ps.sql`update tasks set status = 'claimed', escrow_status = 'funded', seq = seq - 1, record = record || '{"status":"claimed","escrowStatus":"funded"}'::jsonb where task_id = ${taskId}`;
    const { action, workflowId } = await passActingOn(taskId);
    expect(action).toMatchObject({ action: 'refunded', detail: settled.refundTxId, workflowStatus: 'TERMINATED' });
    expect(await balances()).toEqual(after);
    expect(await submissionsOf(`task:${taskId}/refund`)).toBe(1);
    await recordFixture(ps, workflowId, 'escrowReconciler');
  });

  it('a refund the workflow had started (recorded under its refund key, the workflow stopped before it wrote the outcome) is finished, not paid again', async () => {
    const before = await balances();
    const taskId = await postFunded(1.75);
    await stopAfterTransfer(taskId, 'refundEscrow', () => signed(`/market/tasks/${taskId}/cancel`, poster, { posterDid: poster.did }));
    const stranded = await taskOf(taskId);
    expect(stranded).toMatchObject({ status: 'posted', escrowStatus: 'funded' }); // the projection never heard of the refund
    const made = await findSubmission(ps.sql, `task:${taskId}/refund`);
    expect(made?.status).toBe('succeeded');

    const { action } = await passActingOn(taskId);
    expect(action).toMatchObject({ action: 'refunded', detail: made!.transaction_id });
    expect(await taskOf(taskId)).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded', refundTxId: made!.transaction_id });
    const after = await balances();
    expect(after.poster).toBe(before.poster);
    expect(after.escrow).toBe(before.escrow);
    expect(await submissionsOf(`task:${taskId}/refund`)).toBe(1);
  });

  it('a completion recorded before the workflow stopped (its payout under the payout key) pays the claimer exactly once', async () => {
    const before = await balances();
    const taskId = await postFunded(3);
    await claim(taskId);
    await deliver(taskId);
    await stopAfterTransfer(taskId, 'payoutEscrow', () => signed(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey }));
    expect(await taskOf(taskId)).toMatchObject({ status: 'delivered', escrowStatus: 'funded' });
    const made = await findSubmission(ps.sql, `task:${taskId}/payout`);
    expect(made?.status).toBe('succeeded');

    const { action } = await passActingOn(taskId);
    expect(action).toMatchObject({ action: 'paid', detail: made!.transaction_id, workflowStatus: 'TERMINATED' });
    const settled = await taskOf(taskId);
    expect(settled).toMatchObject({ status: 'completed', escrowStatus: 'released', paymentTxId: made!.transaction_id, refundTxId: null });
    const price = 300_000_000n;
    const { claimerTinybars, feeTinybars } = payoutOf(price, feeBps);
    const after = await balances();
    expect(after.poster - before.poster).toBe(-price);
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow).toBe(before.escrow);
    expect((await messagesOf(taskId)).at(-1)).toMatchObject({ type: 'task.completed', paymentTxId: made!.transaction_id });
    // again, with the projection put back: the payout key answers the payout made
    await ps.sql`update tasks set status = 'delivered', escrow_status = 'funded', seq = seq - 1, record = record || '{"status":"delivered","escrowStatus":"funded"}'::jsonb where task_id = ${taskId}`;
    expect((await passActingOn(taskId)).action).toMatchObject({ action: 'paid', detail: made!.transaction_id });
    expect(await balances()).toEqual(after);
    expect(await submissionsOf(`task:${taskId}/payout`)).toBe(1);
  });

  it('a delivered task whose review window ended while its workflow was stopped is paid to the claimer, as the workflow would have', async () => {
    const before = await balances();
    ps.app.market.windows = { reviewSeconds: 4 };
    let taskId: string;
    try {
      taskId = await postFunded(2);
    } finally {
      ps.app.market.windows = undefined;
    }
    await claim(taskId);
    const delivered = await deliver(taskId);
    await terminate(taskId);
    // inside the review window the poster could still have cancelled: only once it has ended is the release due
    const reviewEndsAt = Date.parse(String(delivered.reviewEndsAt));
    expect(reviewEndsAt).toBeGreaterThan(0);
    while (Date.now() <= reviewEndsAt + 200) await new Promise((res) => setTimeout(res, 200));
    const { action } = await passActingOn(taskId);
    expect(action).toMatchObject({ action: 'paid', workflowStatus: 'TERMINATED' });
    const { claimerTinybars, feeTinybars } = payoutOf(200_000_000n, feeBps);
    const after = await balances();
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow).toBe(before.escrow);
    expect(await taskOf(taskId)).toMatchObject({ status: 'completed', escrowStatus: 'released' });
  });

  it('a schedule not yet executed is deleted (the poster is never charged later); a running workflow and one inside the grace are left alone', async () => {
    const before = await balances();
    const r = await signed('/market/tasks', poster, { posterDid: poster.did, title: 'Unfunded and stranded', priceHbar: 1 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ escrowStatus: 'scheduled' });
    const taskId = String(r.body.taskId);
    const running = await postFunded(1.25);
    await terminate(taskId);

    // inside a long grace: left alone
    const early = await pass(600_000);
    expect(early.actions.filter((a) => a.taskId === taskId && a.action !== 'skipped')).toEqual([]);

    // found by Temporal's list of abnormally closed task workflows alone (no sample)
    const { action } = await passActingOn(taskId, { sample: 0 });
    expect(action).toMatchObject({ action: 'cancelled', workflowStatus: 'TERMINATED' });
    expect(await taskOf(taskId)).toMatchObject({ status: 'cancelled', escrowStatus: 'cancelled' });
    expect((await ps.stack.ledger.mirror.getSchedule(r.body.scheduleId))?.deleted).toBe(true);
    // the running task's workflow still holds its escrow and takes steps
    expect(await taskOf(running)).toMatchObject({ status: 'posted', escrowStatus: 'funded' });
    const c = await signed(`/market/tasks/${running}/cancel`, poster, { posterDid: poster.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });
    const after = await balances();
    expect(after.poster).toBe(before.poster);
    expect(after.escrow).toBe(before.escrow);

    // a task whose workflow completed but whose projection says it is open and funded (not in the list
    // of abnormal closes): the sample finds it, and its refund key answers the refund its workflow made
    await ps.t.client.workflow.getHandle(taskWorkflowId(running)).result();
    await ps.sql`update tasks set status = 'posted', escrow_status = 'funded', seq = seq - 1, record = record || '{"status":"posted","escrowStatus":"funded"}'::jsonb where task_id = ${running}`;
    const found = await passActingOn(running);
    expect(found.action).toMatchObject({ action: 'refunded', workflowStatus: 'COMPLETED', detail: c.body.refundTxId });
    expect(await balances()).toEqual(after);
    expect(await submissionsOf(`task:${running}/refund`)).toBe(1);
  });
});
