// The money invariant of the marketplace over a run of mixed lifecycles, run concurrently over HTTP
// against the real workflow and localnet: what went into escrow = what was paid out + refunded +
// fees, to the tinybar, read from the ledger's balances. Lifecycles: complete with escrow (scheduled,
// and funded at posting then raised), complete without escrow, cancel scheduled, cancel funded,
// increase-reward then cancel (scheduled and funded).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hbarToTinybars, payoutOf } from '../../domain/market.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { testConfig } from '../support/app.js';
import { getJson, startPassportStack, type PassportStack, buyPassport } from './passportHarness.js';

type Json = Record<string, any>;

describe('marketplace money invariant', () => {
  let ps: PassportStack;
  let posters: TestAgent[];
  let claimers: TestAgent[];
  let feeBps: number;

  const balance = async (accountId: string) => (await ps.stack.ledger.mirror.getHbarBalance(accountId))!;
  const post = async (path: string, body: unknown, headers: Record<string, string> = {}) => {
    const res = await fetch(`${ps.baseUrl}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    return { status: res.status, body: (await res.json()) as Json };
  };
  const signedPost = async (path: string, agent: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, agent));
  const ok = (r: { status: number; body: Json }) => {
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };

  async function settled(taskId: string, status: 'completed' | 'cancelled'): Promise<Json> {
    const end = Date.now() + 120_000;
    for (;;) {
      const r = await getJson(ps, `/market/tasks/${taskId}`);
      if (r.body.status === status) return r.body;
      if (Date.now() > end) throw new Error(`task ${taskId} not ${status}: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  }

  interface Outcome {
    taskId: string;
    kind: string;
    poster: TestAgent;
    claimer?: TestAgent;
    /** the price paid to claimer + treasury (0 when cancelled) */
    paidTinybars: bigint;
    /** transaction fee the poster paid itself (direct payments only) */
    posterTxFee: bigint;
    final: Json;
  }

  async function postTask(poster: TestAgent, priceHbar: number, mode: 'scheduled' | 'funded' | 'direct'): Promise<Json> {
    const base = { posterDid: poster.did, title: `invariant ${mode} ${priceHbar}`, priceHbar };
    if (mode === 'funded') return ok(await post('/market/tasks/signed', { ...base, posterPrivateKey: poster.privateKey }));
    return ok(await signedPost('/market/tasks', poster, { ...base, escrow: mode !== 'direct' }));
  }

  async function claimAndDeliver(taskId: string, claimer: TestAgent) {
    ok(await signedPost(`/market/tasks/${taskId}/claim`, claimer, { claimerDid: claimer.did }));
    ok(await signedPost(`/market/tasks/${taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: `result of ${taskId}` }));
  }

  async function completeWithEscrow(poster: TestAgent, claimer: TestAgent, priceHbar: number, mode: 'scheduled' | 'funded', raiseTo?: number): Promise<Outcome> {
    const t = await postTask(poster, priceHbar, mode);
    expect(t.escrowStatus).toBe(mode);
    if (raiseTo) ok(await signedPost(`/market/tasks/${t.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: raiseTo }));
    await claimAndDeliver(t.taskId, claimer);
    const done = await post(`/market/tasks/${t.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect([200, 202], JSON.stringify(done.body)).toContain(done.status);
    const final = await settled(t.taskId, 'completed');
    expect(final.escrowStatus).toBe('released');
    return { taskId: t.taskId, kind: `complete ${mode}${raiseTo ? ' raised' : ''}`, poster, claimer, paidTinybars: hbarToTinybars(raiseTo ?? priceHbar)!, posterTxFee: 0n, final };
  }

  async function completeDirect(poster: TestAgent, claimer: TestAgent, priceHbar: number): Promise<Outcome> {
    const t = await postTask(poster, priceHbar, 'direct');
    await claimAndDeliver(t.taskId, claimer);
    const prep = ok(await signedPost(`/market/tasks/${t.taskId}/prepare-payment`, poster, { posterDid: poster.did }));
    const sig = ok(await signedPost('/market/sign', poster, { txBytes: prep.txBytes, privateKey: poster.privateKey }));
    const done = await signedPost(`/market/tasks/${t.taskId}/complete`, poster, { posterDid: poster.did, txBytes: prep.txBytes, signature: sig.signature, publicKey: sig.publicKey });
    expect([200, 202], JSON.stringify(done.body)).toContain(done.status);
    const final = await settled(t.taskId, 'completed');
    const tx = await ps.stack.ledger.mirror.getTransaction(prep.txId);
    expect(tx?.result).toBe('SUCCESS');
    return { taskId: t.taskId, kind: 'complete direct', poster, claimer, paidTinybars: hbarToTinybars(priceHbar)!, posterTxFee: BigInt(tx!.charged_tx_fee ?? 0), final };
  }

  async function cancel(poster: TestAgent, priceHbar: number, mode: 'scheduled' | 'funded', opts: { raiseTo?: number; claimer?: TestAgent } = {}): Promise<Outcome> {
    const t = await postTask(poster, priceHbar, mode);
    if (opts.claimer) ok(await signedPost(`/market/tasks/${t.taskId}/claim`, opts.claimer, { claimerDid: opts.claimer.did }));
    if (opts.raiseTo) ok(await signedPost(`/market/tasks/${t.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: opts.raiseTo }));
    const r = await signedPost(`/market/tasks/${t.taskId}/cancel`, poster, { posterDid: poster.did });
    expect([200, 202], JSON.stringify(r.body)).toContain(r.status);
    const final = await settled(t.taskId, 'cancelled');
    expect(final.escrowStatus).toBe(mode === 'funded' ? 'refunded' : 'cancelled');
    return { taskId: t.taskId, kind: `cancel ${mode}${opts.raiseTo ? ' raised' : ''}`, poster, paidTinybars: 0n, posterTxFee: 0n, final };
  }

  beforeAll(async () => {
    ps = await startPassportStack('minv');
    feeBps = testConfig(ps.stack.env).MARKET_FEE_BPS;
    const state = ps.app.market;
    state.taskTimings = { retryInitialMs: 200, retryMaximumMs: 2_000, ledgerMaxAttempts: 10, activityTimeoutMs: 60_000 };
    await ps.startWorker();
    posters = [ps.agents[0], ps.agents[1]]; // ED25519 and ECDSA
    claimers = [ps.agents[2], ps.agents[3]];
    for (const a of [...posters, ...claimers]) ok(await buyPassport(ps, a, { tier: 'gold' }));
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('escrowed in = paid out + refunded + fees, to the tinybar, over concurrent mixed lifecycles', async () => {
    const { escrow, treasury } = ps.stack.deployment;
    const parties = [...posters, ...claimers].map((a) => a.accountId);
    const before = new Map<string, bigint>();
    for (const id of [escrow, treasury, ...parties]) before.set(id, await balance(id));

    const [p1, p2] = posters;
    const [c1, c2] = claimers;
    const outcomes = await Promise.all([
      completeWithEscrow(p1, c1, 3, 'scheduled'),
      completeWithEscrow(p2, c2, 2.5, 'funded', 4.25),
      completeWithEscrow(p1, c2, 1.23456789, 'scheduled', 2),
      completeDirect(p2, c1, 1.75),
      cancel(p1, 2, 'scheduled'),
      cancel(p2, 3, 'funded', { claimer: c1 }),
      cancel(p1, 1, 'scheduled', { raiseTo: 1.5 }),
      cancel(p2, 2, 'funded', { raiseTo: 2.75 }),
    ]);

    const delta = async (id: string) => (await balance(id)) - before.get(id)!;
    const completed = outcomes.filter((o) => o.paidTinybars > 0n);
    const split = completed.map((o) => ({ o, ...payoutOf(o.paidTinybars, feeBps) }));

    // the escrow account ends where it started: everything escrowed went out again
    expect(await delta(escrow)).toBe(0n);
    // paid out to claimers, per claimer
    for (const c of claimers) {
      const expected = split.filter((s) => s.o.claimer === c).reduce((sum, s) => sum + s.claimerTinybars, 0n);
      expect(await delta(c.accountId), `claimer ${c.accountId}`).toBe(expected);
    }
    // fees to the treasury
    expect(await delta(treasury)).toBe(split.reduce((sum, s) => sum + s.feeTinybars, 0n));
    // posters paid exactly the prices of their completed tasks (refunds and deleted schedules cost them nothing),
    // plus the network fee of their own direct payment
    for (const p of posters) {
      const paid = completed.filter((o) => o.poster === p).reduce((sum, o) => sum + o.paidTinybars + o.posterTxFee, 0n);
      expect(await delta(p.accountId), `poster ${p.accountId}`).toBe(-paid);
    }
    // and the whole: what left the posters (less their network fees) = claimers + treasury, nothing kept, nothing made up
    const posterOut = -((await delta(p1.accountId)) + (await delta(p2.accountId))) - outcomes.reduce((s, o) => s + o.posterTxFee, 0n);
    const claimerIn = (await delta(c1.accountId)) + (await delta(c2.accountId));
    expect(posterOut).toBe(claimerIn + (await delta(treasury)));

    // every refunded task has its refund on the ledger, every released one its payout
    for (const o of outcomes) {
      const txId = o.final.paymentTxId ?? o.final.refundTxId;
      if (o.final.escrowStatus === 'cancelled') {
        expect(txId ?? null, o.kind).toBeNull();
        continue;
      }
      const tx = await ps.stack.ledger.mirror.getTransaction(txId);
      expect(tx?.result, o.kind).toBe('SUCCESS');
    }
  });
});
