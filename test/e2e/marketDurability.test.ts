// Durability of task payouts: the worker dies between the poster's signature and the payout; localnet
// answers BUSY during the payout; the payout's answer is lost after it reached the ledger. Each time
// the task completes with exactly one payout, proven by balances (claimer + price - fee, treasury
// + fee, escrow back where it was, poster - price) and by the payout transaction on the mirror.
// Everything goes through the HTTP routes and the real taskLifecycle workflow on localnet.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Context } from '@temporalio/activity';
import type { MarketLedgerActivities } from '../../activities/ledger/market.js';
import { hbarToTinybars, payoutOf } from '../../domain/market.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { testConfig } from '../support/app.js';
import { getJson, paidPost, startPassportStack, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;
type PayoutInput = Parameters<MarketLedgerActivities['payoutEscrow']>[0];
type DirectInput = Parameters<MarketLedgerActivities['submitDirectTransfer']>[0];

describe('marketplace payout durability', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let claimer: TestAgent;
  let feeBps: number;
  const market = () => ps.activities as unknown as MarketLedgerActivities;
  const hooks: { beforePayout?: (i: PayoutInput) => Promise<void>; afterPayout?: (i: PayoutInput) => Promise<void>; beforeDirect?: (i: DirectInput) => Promise<void> } = {};
  const payoutCalls: string[] = [];
  const hooked = () => ({
    payoutEscrow: async (input: PayoutInput) => {
      payoutCalls.push(input.idempotencyKey);
      await hooks.beforePayout?.(input);
      const r = await market().payoutEscrow(input);
      await hooks.afterPayout?.(input);
      return r;
    },
    submitDirectTransfer: async (input: DirectInput) => {
      await hooks.beforeDirect?.(input);
      return market().submitDirectTransfer(input);
    },
  });

  const balance = async (accountId: string) => (await ps.stack.ledger.mirror.getHbarBalance(accountId))!;
  const balances = async () => ({
    poster: await balance(poster.accountId),
    claimer: await balance(claimer.accountId),
    treasury: await balance(ps.stack.deployment.treasury),
    escrow: await balance(ps.stack.deployment.escrow),
  });
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${ps.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const signedPost = async (path: string, agent: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, agent));

  /** Posts (escrow or not), claims and delivers over HTTP; returns the task id. */
  async function deliveredTask(priceHbar: number, escrow: boolean): Promise<string> {
    const posted = await signedPost('/market/tasks', poster, { posterDid: poster.did, title: `durable ${priceHbar}`, priceHbar, escrow });
    expect(posted.status, JSON.stringify(posted.body)).toBe(200);
    const taskId = posted.body.taskId as string;
    expect(posted.body.escrowStatus).toBe(escrow ? 'scheduled' : 'none');
    const claimed = await signedPost(`/market/tasks/${taskId}/claim`, claimer, { claimerDid: claimer.did });
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    const delivered = await signedPost(`/market/tasks/${taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'done' });
    expect(delivered.status, JSON.stringify(delivered.body)).toBe(200);
    return taskId;
  }

  async function waitCompleted(taskId: string, timeoutMs = 120_000): Promise<Json> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await getJson(ps, `/market/tasks/${taskId}`);
      if (r.body.status === 'completed') return r.body;
      if (Date.now() > end) throw new Error(`task ${taskId} not completed: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  }

  /** Exactly one payout of price - fee and fee, from escrow (the poster paid the price in). */
  async function expectOnePayout(before: Awaited<ReturnType<typeof balances>>, priceHbar: number, task: Json) {
    const { claimerTinybars, feeTinybars } = payoutOf(hbarToTinybars(priceHbar)!, feeBps);
    const after = await balances();
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow).toBe(before.escrow);
    expect(before.poster - after.poster).toBe(claimerTinybars + feeTinybars);
    const tx = await ps.stack.ledger.mirror.getTransaction(task.paymentTxId);
    expect(tx?.result).toBe('SUCCESS');
    const toClaimer = (tx?.transfers ?? []).filter((t) => t.account === claimer.accountId).reduce((s, t) => s + BigInt(t.amount), 0n);
    expect(toClaimer).toBe(claimerTinybars);
  }

  beforeAll(async () => {
    ps = await startPassportStack('mdur');
    [poster, claimer] = [ps.agents[0], ps.agents[1]];
    feeBps = testConfig(ps.stack.env).MARKET_FEE_BPS;
    // fast retries so a blocked or failing attempt is retried within a second; short waits so a request blocked on a dead worker answers 202
    const state = ps.app.market;
    state.taskTimings = { retryInitialMs: 200, retryMaximumMs: 2_000, ledgerMaxAttempts: 10, activityTimeoutMs: 60_000 };
    state.settings.workflowWaitMs = 5_000;
    const w = await ps.startWorker();
    for (const a of [poster, claimer]) {
      const r = await paidPost(ps, a, '/passport/request', { tier: 'gold' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    w.worker.shutdown();
    await w.running;
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('the worker dies after the poster signed the escrow and before the payout; a new worker pays once', async () => {
    const first = await ps.startWorker(hooked() as never, { shutdownGraceTime: '50ms' });
    const taskId = await deliveredTask(4, true);
    const before = await balances();
    let reached!: () => void;
    const atPayout = new Promise<void>((r) => (reached = r));
    hooks.beforePayout = async () => {
      reached();
      await Context.current().cancelled; // blocks until the worker shuts down, then fails this attempt
    };
    payoutCalls.length = 0;
    const completing = signedPost(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    await atPayout;
    // the poster's signature went through: the price sits in escrow, nothing is paid out yet
    expect((await balance(ps.stack.deployment.escrow)) - before.escrow).toBe(hbarToTinybars(4)!);
    expect(await balance(claimer.accountId)).toBe(before.claimer);
    first.worker.shutdown();
    await first.running;
    hooks.beforePayout = undefined;
    const second = await ps.startWorker(hooked() as never);
    const answered = await completing;
    expect([200, 202], JSON.stringify(answered.body)).toContain(answered.status);
    const task = await waitCompleted(taskId);
    expect(task.escrowStatus).toBe('released');
    await expectOnePayout(before, 4, task);
    // every attempt used the same idempotency key
    expect(new Set(payoutCalls).size).toBe(1);
    expect(payoutCalls.length).toBeGreaterThanOrEqual(2);
    second.worker.shutdown();
    await second.running;
  });

  it('the worker dies after the API handed over the signed direct payment and before it was submitted; a new worker pays once', async () => {
    const first = await ps.startWorker(hooked() as never, { shutdownGraceTime: '50ms' });
    const taskId = await deliveredTask(3, false);
    const before = await balances();
    let reached!: () => void;
    const atSubmit = new Promise<void>((r) => (reached = r));
    hooks.beforeDirect = async () => {
      reached();
      await Context.current().cancelled;
    };
    const prep = await signedPost(`/market/tasks/${taskId}/prepare-payment`, poster, { posterDid: poster.did });
    expect(prep.status, JSON.stringify(prep.body)).toBe(200);
    const sig = await signedPost('/market/sign', poster, { txBytes: prep.body.txBytes, privateKey: poster.privateKey });
    const completing = signedPost(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, txBytes: prep.body.txBytes, signature: sig.body.signature, publicKey: sig.body.publicKey });
    await atSubmit;
    first.worker.shutdown();
    await first.running;
    hooks.beforeDirect = undefined;
    const second = await ps.startWorker(hooked() as never);
    await completing;
    const task = await waitCompleted(taskId);
    expect(task.paymentTxId).toBe(prep.body.txId);
    const { claimerTinybars, feeTinybars } = payoutOf(hbarToTinybars(3)!, feeBps);
    const tx = await ps.stack.ledger.mirror.getTransaction(prep.body.txId);
    const after = await balances();
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow).toBe(before.escrow);
    expect(before.poster - after.poster).toBe(claimerTinybars + feeTinybars + BigInt(tx!.charged_tx_fee ?? 0));
    second.worker.shutdown();
    await second.running;
  });

  it('localnet answers BUSY during the payout: retried, paid once', async () => {
    const w = await ps.startWorker(hooked() as never);
    const taskId = await deliveredTask(2, true);
    const before = await balances();
    hooks.beforePayout = async () => {
      ps.stack.localnet.faults.busy(6); // the next 6 transactions (the payout's attempts) answer BUSY
    };
    const done = await signedPost(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    hooks.beforePayout = undefined;
    expect([200, 202], JSON.stringify(done.body)).toContain(done.status);
    const task = await waitCompleted(taskId);
    expect(ps.stack.localnet.faults.state().busyRemaining).toBe(0);
    await expectOnePayout(before, 2, task);
    w.worker.shutdown();
    await w.running;
  });

  it('the payout reached the ledger but its answer was lost: the retry reuses it, paid once', async () => {
    const w = await ps.startWorker(hooked() as never);
    const taskId = await deliveredTask(5, true);
    const before = await balances();
    let lost = false;
    payoutCalls.length = 0;
    hooks.afterPayout = async () => {
      if (lost) return;
      lost = true;
      throw new Error('connection reset after the payout was submitted (answer lost)');
    };
    const done = await signedPost(`/market/tasks/${taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    hooks.afterPayout = undefined;
    expect([200, 202], JSON.stringify(done.body)).toContain(done.status);
    const task = await waitCompleted(taskId);
    expect(lost).toBe(true);
    expect(payoutCalls.length).toBe(2);
    expect(new Set(payoutCalls).size).toBe(1);
    await expectOnePayout(before, 5, task);
    w.worker.shutdown();
    await w.running;
  });
});
