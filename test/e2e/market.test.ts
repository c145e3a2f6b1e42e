// The task marketplace end to end over HTTP (SPEC 3, 4.4a; DESIGN.md 6 "Marketplace escrow"):
// agents with real passports (bought over x402) post, claim, deliver, complete and cancel tasks; the
// escrow is a real scheduled transfer on localnet. Balances are read from the ledger before and after
// each lifecycle, so every amount is proven to the tinybar: the claimer gets price - fee, the
// treasury the fee, the poster back exactly what was escrowed on cancel. (The service's operator
// pays every fee, including the scheduled transfers' as the schedules' creator, so the parties'
// balances move by the task amounts only.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { payoutOf, parseTaskMessage, type TaskMessage } from '../../domain/market.js';
import type { TestAgent } from '../support/signing.js';
import { signedHeaders } from '../support/signing.js';
import { taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { temporal } from '@temporalio/proto';
import { parsePrivateKey } from '@agent-passport/core/keys';
import { buildTestApp } from '../support/app.js';
import { getJson, recordFixture, postJson, startPassportStack, tinybarBalance, type PassportStack, buyPassport } from './passportHarness.js';

type Json = Record<string, any>;
const TINY = 100_000_000n;

describe('task marketplace end to end (localnet escrow schedules, taskLifecycle workflow, NOTIFY-fed reads)', () => {
  let ps: PassportStack;
  let poster: TestAgent; // ED25519
  let claimer: TestAgent; // ECDSA
  let other: TestAgent; // a third agent with a passport
  let nobody: TestAgent; // never had a passport
  let feeBps: number;
  let treasury: string;
  let escrow: string;
  let worker: Awaited<ReturnType<PassportStack['startWorker']>>;

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => postJson(ps, path, body, headers);
  const signed = async (path: string, signer: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, signer));
  const balance = (accountId: string) => tinybarBalance(ps, accountId);
  const balances = async () => ({
    poster: await balance(poster.accountId),
    claimer: await balance(claimer.accountId),
    treasury: await balance(treasury),
    escrow: await balance(escrow),
  });
  const waitTask = async (taskId: string, pred: (t: Json) => boolean, what: string, timeoutMs = 90_000): Promise<Json> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await getJson(ps, `/market/tasks/${taskId}`);
      if (r.status === 200 && pred(r.body)) return r.body;
      if (Date.now() > end) throw new Error(`task ${taskId}: ${what} not reached: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  };
  const messagesOf = async (taskId: string): Promise<TaskMessage[]> => {
    const raw = await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.marketplace);
    return raw
      .map((m) => parseTaskMessage(Buffer.from(m.message, 'base64').toString('utf8')))
      .filter((m): m is TaskMessage => m !== null && m.taskId === taskId);
  };
  const newTask = (over: Json = {}) => ({ posterDid: poster.did, title: 'Summarise a paper', description: 'Two paragraphs', priceHbar: 3, capabilities: ['data_provide'], ...over });
  const postTask = async (over: Json = {}) => {
    const r = await signed('/market/tasks', poster, newTask(over));
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const claimAndDeliver = async (taskId: string) => {
    const c = await signed(`/market/tasks/${taskId}/claim`, claimer, { claimerDid: claimer.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body.status).toBe('claimed');
    const d = await signed(`/market/tasks/${taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'the summary' });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(d.body.status).toBe('delivered');
    return d.body;
  };

  beforeAll(async () => {
    ps = await startPassportStack('market');
    worker = await ps.startWorker();
    [poster, claimer, other, nobody] = ps.agents;
    for (const a of [poster, claimer, other]) {
      const r = await buyPassport(ps, a, { tier: 'gold' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    feeBps = Number(ps.stack.env.MARKET_FEE_BPS ?? 250);
    treasury = ps.stack.deployment.treasury;
    escrow = ps.stack.deployment.escrow;
    ps.app.market.settings.workflowWaitMs = 60_000;
  }, 240_000);
  afterAll(async () => {
    await ps?.stop();
  });

  it('posted (scheduled) -> claimed -> delivered -> completed: the claimer gets price - fee, the treasury the fee, the poster pays exactly the price', async () => {
    const before = await balances();
    const task = await postTask({ priceHbar: 3.5 });
    expect(task).toMatchObject({ status: 'posted', escrowStatus: 'scheduled', posterDid: poster.did, claimerDid: null, priceHbar: 3.5, verificationAttempts: 0, verifierType: 'none' });
    expect(task.taskId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7/);
    expect(task._links.claim).toEqual({ href: `/market/tasks/${task.taskId}/claim`, method: 'POST' });
    // the schedule is on the mirror, pending, its admin key the service's
    const schedule = await ps.stack.ledger.mirror.getSchedule(task.scheduleId);
    expect(schedule).toMatchObject({ schedule_id: task.scheduleId, deleted: false, executed_timestamp: null });
    expect(schedule!.admin_key).toBeTruthy();
    // nothing moved yet
    expect((await balances()).poster).toBe(before.poster);

    // escrow status
    const es = await getJson(ps, `/market/tasks/${task.taskId}/escrow-status`);
    expect(es.status).toBe(200);
    expect(es.body).toMatchObject({ taskId: task.taskId, scheduleId: task.scheduleId, escrowStatus: 'scheduled', verificationAttempts: 0, verifierType: 'none', priceHbar: 3.5, escrowAccountId: escrow });

    // wrong statuses before claim: deliver 409, complete 400, verify-like steps refused
    const early = await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'x' });
    expect(early.status).toBe(409);
    const earlyComplete = await signed(`/market/tasks/${task.taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(earlyComplete.status).toBe(400);

    const delivered = await claimAndDeliver(task.taskId);
    expect(delivered.resultBody).toBe('the summary');
    expect(delivered.resultSha256).toMatch(/^[0-9a-f]{64}$/);
    expect(delivered.claimerDid).toBe(claimer.did);

    // claim again: 409; increase-reward after delivery: 400; a non-poster completing: 403
    expect((await signed(`/market/tasks/${task.taskId}/claim`, other, { claimerDid: other.did })).status).toBe(409);
    expect((await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 9 })).status).toBe(400);
    expect((await signed(`/market/tasks/${task.taskId}/complete`, other, { posterDid: other.did, posterPrivateKey: other.privateKey })).status).toBe(403);
    // with escrow, a signature-only completion is refused and the key is required
    const sigOnly = await signed(`/market/tasks/${task.taskId}/complete`, poster, { posterDid: poster.did, txBytes: 'AAAA', publicKey: 'aa', signature: 'bb' });
    expect(sigOnly.status).toBe(400);
    expect(sigOnly.body.code).toBe('invalid_request');
    expect(sigOnly.body.error).toMatch(/posterPrivateKey is required/);
    // another account's key does not release the escrow
    const wrongKey = await signed(`/market/tasks/${task.taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: other.privateKey });
    expect(wrongKey.status).toBe(403);
    expect(JSON.stringify(wrongKey.body)).not.toContain(other.privateKey);

    const done = await signed(`/market/tasks/${task.taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', escrowStatus: 'released' });
    expect(done.body.paymentTxId).toMatch(/^0\.0\.\d+@\d+\.\d+$/);
    expect(JSON.stringify(done.body)).not.toContain(poster.privateKey);

    const after = await balances();
    const price = 350_000_000n;
    const { claimerTinybars, feeTinybars } = payoutOf(price, feeBps);
    expect(feeTinybars).toBe((price * BigInt(feeBps)) / 10_000n);
    expect(after.poster - before.poster).toBe(-price);
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow - before.escrow).toBe(0n);

    // the schedule executed; the payout is on the mirror
    const executed = await ps.stack.ledger.mirror.getSchedule(task.scheduleId);
    expect(executed!.executed_timestamp).toBeTruthy();
    const payout = await ps.stack.ledger.mirror.getTransaction(done.body.paymentTxId);
    expect(payout?.result).toBe('SUCCESS');

    // topic messages in order, ids only
    const msgs = await messagesOf(task.taskId);
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.delivered', 'task.completed']);
    expect(msgs.map((m) => m.seq)).toEqual([...msgs.map((m) => m.seq)].sort((a, b) => a - b));
    expect(msgs[3].paymentTxId).toBe(done.body.paymentTxId);
    expect(JSON.stringify(msgs)).not.toContain('the summary');

    // completed is final
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(400);
    await recordFixture(ps, taskWorkflowId(task.taskId), 'taskLifecycle-completed');
  });

  it('POST /market/tasks/signed funds the escrow at once; cancel refunds the poster exactly what was escrowed', async () => {
    const before = await balances();
    const r = await post('/market/tasks/signed', { ...newTask({ priceHbar: 2.25 }), posterPrivateKey: poster.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ status: 'posted', escrowStatus: 'funded' });
    expect(JSON.stringify(r.body)).not.toContain(poster.privateKey);
    const funded = await balances();
    expect(funded.poster - before.poster).toBe(-225_000_000n);
    expect(funded.escrow - before.escrow).toBe(225_000_000n);

    const claimed = await post(`/market/tasks/${r.body.taskId}/claim-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey });
    expect(claimed.status, JSON.stringify(claimed.body)).toBe(200);
    const c = await signed(`/market/tasks/${r.body.taskId}/cancel`, poster, { posterDid: poster.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });
    expect(c.body.refundTxId).toMatch(/^0\.0\.\d+@/);
    const after = await balances();
    expect(after.poster).toBe(before.poster);
    expect(after.escrow).toBe(before.escrow);
    expect((await messagesOf(r.body.taskId)).map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.cancelled']);
    await recordFixture(ps, taskWorkflowId(r.body.taskId), 'taskLifecycle-refunded');
  });

  it('cancel of a scheduled escrow deletes the schedule (cancelled); nothing moves', async () => {
    const before = await balances();
    const task = await postTask();
    const c = await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ status: 'cancelled', escrowStatus: 'cancelled' });
    expect((await ps.stack.ledger.mirror.getSchedule(task.scheduleId))!.deleted).toBe(true);
    expect((await balances()).poster).toBe(before.poster);
    // a cancelled task takes no more steps; the poster's repeated cancel (a lost answer) answers the task as it is
    expect((await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(409);
    const again = await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ status: 'cancelled', escrowStatus: 'cancelled' });
    // another party: the status check comes first (SPEC 3), 400 as before
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, other, { posterDid: other.did })).status).toBe(400);
  });

  it('increase-reward on a scheduled escrow replaces the schedule; complete-with-key pays the new price', async () => {
    const before = await balances();
    const task = await postTask({ priceHbar: 1 });
    const up = await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 1.5 });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toMatchObject({ priceHbar: 1.5, escrowStatus: 'scheduled', status: 'posted' });
    expect(up.body.scheduleId).not.toBe(task.scheduleId);
    expect((await ps.stack.ledger.mirror.getSchedule(task.scheduleId))!.deleted).toBe(true);
    // not higher: 400; not the poster: 403
    expect((await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 1.5 })).status).toBe(400);
    expect((await signed(`/market/tasks/${task.taskId}/increase-reward`, other, { posterDid: other.did, newPriceHbar: 5 })).status).toBe(403);

    await claimAndDeliver(task.taskId);
    const done = await post(`/market/tasks/${task.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', escrowStatus: 'released' });
    const after = await balances();
    const { claimerTinybars, feeTinybars } = payoutOf(150_000_000n, feeBps);
    expect(after.poster - before.poster).toBe(-150_000_000n);
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect((await messagesOf(task.taskId)).map((m) => m.type)).toEqual(['task.posted', 'task.reward_increased', 'task.claimed', 'task.delivered', 'task.completed']);
  });

  it('increase-reward on a funded escrow adds a top-up schedule, signed at completion', async () => {
    const before = await balances();
    const r = await post('/market/tasks/signed', { ...newTask({ priceHbar: 2 }), posterPrivateKey: poster.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const up = await signed(`/market/tasks/${r.body.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 2.75 });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toMatchObject({ priceHbar: 2.75, escrowStatus: 'funded' });
    expect(up.body.topUpScheduleId).toMatch(/^0\.0\.\d+$/);
    expect((await balances()).poster - before.poster).toBe(-200_000_000n);
    await claimAndDeliver(r.body.taskId);
    const done = await signed(`/market/tasks/${r.body.taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', escrowStatus: 'released', topUpScheduleId: null });
    const after = await balances();
    const { claimerTinybars, feeTinybars } = payoutOf(275_000_000n, feeBps);
    expect(after.poster - before.poster).toBe(-275_000_000n);
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow).toBe(before.escrow);
  });

  it('completion with a poster who cannot cover the escrow answers 400; nothing is paid and the task can still be cancelled', async () => {
    const before = await balances();
    const task = await postTask({ priceHbar: 50_000 });
    await claimAndDeliver(task.taskId);
    const r = await signed(`/market/tasks/${task.taskId}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(400);
    expect(r.body.error).toMatch(/INSUFFICIENT_ACCOUNT_BALANCE/);
    const after = await balances();
    expect(after.poster).toBe(before.poster);
    expect(after.claimer).toBe(before.claimer);
    expect(after.treasury).toBe(before.treasury);
    expect((await getJson(ps, `/market/tasks/${task.taskId}`)).body).toMatchObject({ status: 'delivered', escrowStatus: 'scheduled', paymentTxId: null });
    const c = await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(c.body).toMatchObject({ status: 'cancelled', escrowStatus: 'cancelled' });
    expect((await balances()).poster).toBe(before.poster);
  });

  it('refuses what SPEC refuses: 401 unsigned, 403 DID mismatch or no passport, 400 bad bodies, 403 non-claimer delivery, 404 unknown task', async () => {
    expect((await post('/market/tasks', newTask())).status).toBe(401);
    const mismatch = await signed('/market/tasks', other, newTask());
    expect(mismatch.status).toBe(403);
    const noPassport = await signed('/market/tasks', nobody, newTask({ posterDid: nobody.did }));
    expect(noPassport.status).toBe(403);
    expect(noPassport.body.code).toBe('passport_not_found');
    for (const bad of [{ title: '' }, { title: 'x'.repeat(201) }, { description: 'x'.repeat(4001) }, { priceHbar: 0 }, { priceHbar: -1 }, { priceHbar: 1.123456789 }, { extra: 1 }, { verifierType: 'http' }, { deadline: '2001-01-01T00:00:00Z' }]) {
      const r = await signed('/market/tasks', poster, newTask(bad));
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.code).toBe('invalid_request');
    }
    // the verifier settings are checked at posting as the verifier will use them (a schema is compiled now)
    const badVerifiers = [
      { verifierType: 'json_schema', verifierConfig: { schema: { $ref: 'https://schemas.example/task.json' } } },
      { verifierType: 'json_schema', verifierConfig: { schema: { properties: { a: { $ref: 'other.json#/a' } } } } },
      { verifierType: 'json_schema', verifierConfig: { schema: { type: 'no-such-type' } } },
      { verifierType: 'json_schema', verifierConfig: { schema: { type: 'object' }, extra: 1 } },
      { verifierType: 'http', verifierConfig: { url: 'ftp://verifier.example/check' } },
      { verifierType: 'http', verifierConfig: { url: 'https://user:pw@verifier.example/check' } },
      { verifierType: 'sha256', verifierConfig: { sha256: 'abc' } },
      { verifierType: 'none', verifierConfig: { url: 'https://verifier.example/check' } },
    ];
    for (const bad of badVerifiers) {
      const r = await signed('/market/tasks', poster, newTask(bad));
      expect(r.status, JSON.stringify(bad)).toBe(400);
      expect(r.body.code).toBe('invalid_request');
      expect(r.body.error, JSON.stringify(bad)).toMatch(/^verifierConfig/);
    }
    const expected = 'AB'.repeat(32);
    const normalised = await postTask({ verifierType: 'sha256', verifierConfig: { sha256: expected } });
    expect(normalised.verifierConfig).toEqual({ sha256: expected.toLowerCase() });
    const signedNoPassport = await post('/market/tasks/signed', { ...newTask({ posterDid: nobody.did }), posterPrivateKey: nobody.privateKey });
    expect(signedNoPassport.status).toBe(403);
    const signedWrongKey = await post('/market/tasks/signed', { ...newTask(), posterPrivateKey: other.privateKey });
    expect(signedWrongKey.status).toBe(403);

    const task = await postTask();
    // the claimer needs a passport
    expect((await signed(`/market/tasks/${task.taskId}/claim`, nobody, { claimerDid: nobody.did })).status).toBe(403);
    // the poster cannot claim their own task
    expect((await signed(`/market/tasks/${task.taskId}/claim`, poster, { claimerDid: poster.did })).status).toBe(400);
    expect((await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    // only the claimer delivers; results: present, <= 4096 bytes, or an IPFS reference
    expect((await signed(`/market/tasks/${task.taskId}/deliver`, other, { claimerDid: other.did, resultBody: 'x' })).status).toBe(403);
    expect((await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did })).status).toBe(400);
    expect((await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'é'.repeat(2049) })).status).toBe(400);
    expect((await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultIpfs: 'not-a-cid' })).status).toBe(400);
    const ipfs = 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/result.json';
    const d = await post(`/market/tasks/${task.taskId}/deliver-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey, resultIpfs: ipfs });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    expect(d.body).toMatchObject({ status: 'delivered', resultIpfs: ipfs, resultBody: null });
    // a body of exactly 4096 bytes is accepted elsewhere; here the task is delivered already: 409
    expect((await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'x'.repeat(4096) })).status).toBe(409);
    // claim-with-key with another account's key: 403
    const t2 = await postTask();
    expect((await post(`/market/tasks/${t2.taskId}/claim-with-key`, { claimerDid: claimer.did, claimerPrivateKey: other.privateKey })).status).toBe(403);
    const full = await signed(`/market/tasks/${t2.taskId}/claim`, claimer, { claimerDid: claimer.did });
    expect(full.status).toBe(200);
    const exact = await signed(`/market/tasks/${t2.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'x'.repeat(4096) });
    expect(exact.status, JSON.stringify(exact.body)).toBe(200);

    const unknown = '01900000-0000-7000-8000-000000000000';
    expect((await getJson(ps, `/market/tasks/${unknown}`)).status).toBe(404);
    expect((await getJson(ps, `/market/tasks/${unknown}/escrow-status`)).status).toBe(404);
    expect((await signed(`/market/tasks/${unknown}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(404);
    expect((await getJson(ps, '/market/tasks/not-a-task')).status).toBe(404);
  });

  it('GET /market/tasks: newest first, capability filter, pagination, 400 on invalid values', async () => {
    const a = await postTask({ capabilities: ['orchestration'], title: 'first' });
    const b = await postTask({ capabilities: ['orchestration', 'api_call'], title: 'second' });
    const c = await postTask({ capabilities: ['api_call'], title: 'third' });
    const want = [c.taskId, b.taskId, a.taskId];
    const all = await waitList('/market/tasks?limit=100', (ids) => want.every((id) => ids.includes(id)));
    const ids = all.tasks.map((t: Json) => t.taskId);
    expect(ids.filter((id: string) => want.includes(id))).toEqual(want);
    expect(ids).toEqual([...ids].sort().reverse());
    expect(all.total).toBeGreaterThanOrEqual(3);
    const orch = await getJson(ps, '/market/tasks?capability=orchestration&limit=100');
    expect(orch.body.tasks.map((t: Json) => t.taskId)).toEqual([b.taskId, a.taskId]);
    expect(orch.body).toMatchObject({ count: 2, total: 2, limit: 100, offset: 0 });
    const page = await getJson(ps, '/market/tasks?capability=orchestration&limit=1&offset=1');
    expect(page.body.tasks.map((t: Json) => t.taskId)).toEqual([a.taskId]);
    expect(page.body).toMatchObject({ count: 1, total: 2, limit: 1, offset: 1 });
    const dflt = await getJson(ps, '/market/tasks');
    expect(dflt.body.limit).toBe(20);
    for (const q of ['limit=0', 'limit=101', 'limit=abc', 'offset=-1', 'capability=', 'status=nope', 'foo=1']) {
      const r = await getJson(ps, `/market/tasks?${q}`);
      expect(r.status, q).toBe(400);
      expect(r.body.code).toBe('invalid_request');
    }
  });

  async function waitList(path: string, pred: (ids: string[]) => boolean): Promise<Json> {
    for (let i = 0; i < 200; i++) {
      const r = await getJson(ps, path);
      if (r.status === 200 && pred(r.body.tasks.map((t: Json) => t.taskId))) return r.body;
      await new Promise((res) => setTimeout(res, 100));
    }
    throw new Error(`list ${path} never matched`);
  }

  it('renews a pending schedule before it expires, and marks it expired once it cannot (short timings)', async () => {
    const state = ps.app.market;
    state.taskTimings = { scheduleLifetimeMs: 8_000, renewLeadMs: 4_000, maxRenewals: 1, retryInitialMs: 200, retryMaximumMs: 1_000 };
    let task: Json;
    try {
      task = await postTask({ priceHbar: 1 });
    } finally {
      state.taskTimings = undefined;
    }
    const renewed = await waitTask(task.taskId, (t) => t.scheduleId !== task.scheduleId, 'renewal');
    expect(renewed.escrowStatus).toBe('scheduled');
    expect((await ps.stack.ledger.mirror.getSchedule(task.scheduleId))!.deleted).toBe(true);
    const expired = await waitTask(task.taskId, (t) => t.escrowStatus === 'expired', 'expiry');
    expect(expired.status).toBe('posted');
    expect(expired.scheduleId).toBe(renewed.scheduleId);
    expect((await messagesOf(task.taskId)).map((m) => m.type)).toEqual(['task.posted', 'task.expired']);
    // an expired escrow cannot be completed; raising the reward creates a fresh schedule
    const up = await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 1.25 });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body.escrowStatus).toBe('scheduled');
    expect(up.body.scheduleId).not.toBe(renewed.scheduleId);
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
  }, 120_000);

  it('an unfunded escrow schedule lapses at its expiry instead of being renewed: one ScheduleCreate per unfunded task (issue 26 item 8)', async () => {
    const state = ps.app.market;
    // the default renewals (none given): before issue 26, as many as the 24 h funding window holds
    state.taskTimings = { scheduleLifetimeMs: 8_000, renewLeadMs: 4_000, retryInitialMs: 200, retryMaximumMs: 1_000 };
    let task: Json;
    try {
      task = await postTask({ priceHbar: 1 });
    } finally {
      state.taskTimings = undefined;
    }
    expect(task.escrowStatus).toBe('scheduled');
    const lapsed = await waitTask(task.taskId, (t) => t.escrowStatus !== 'scheduled' || t.scheduleId !== task.scheduleId, 'the lapse');
    expect(lapsed).toMatchObject({ status: 'posted', escrowStatus: 'expired', scheduleId: task.scheduleId });
    expect((await messagesOf(task.taskId)).map((m) => m.type)).toEqual(['task.posted', 'task.expired']);
    const creates = await ps.sql<{ count: number }[]>`
      select count(*)::int as count from ledger_submissions where idempotency_key like ${`${taskWorkflowId(task.taskId)}/%`} and kind = 'schedule_create'`;
    expect(creates[0]!.count).toBe(1);
    // the poster can still fund it: raising the reward makes a fresh schedule (MARKET_REWARD_INCREASES_MAX per task)
    const up = await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 1.25 });
    expect(up.status, JSON.stringify(up.body)).toBe(200);
    expect(up.body).toMatchObject({ escrowStatus: 'scheduled' });
    expect(up.body.scheduleId).not.toBe(task.scheduleId);
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
    await recordFixture(ps, taskWorkflowId(task.taskId), 'taskLifecycle-unfunded-lapsed');
  }, 120_000);

  it('at the deadline an unfinished funded task is cancelled and the poster refunded', async () => {
    const before = await balances();
    const deadline = new Date(Date.now() + 6_000).toISOString();
    const r = await post('/market/tasks/signed', { ...newTask({ priceHbar: 1.75, deadline }), posterPrivateKey: poster.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ escrowStatus: 'funded', deadline });
    expect((await signed(`/market/tasks/${r.body.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    const ended = await waitTask(r.body.taskId, (t) => t.status === 'cancelled', 'deadline');
    expect(ended.escrowStatus).toBe('refunded');
    const after = await balances();
    expect(after.poster).toBe(before.poster);
    expect(after.escrow).toBe(before.escrow);
    const msgs = await messagesOf(r.body.taskId);
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.expired']);
    expect(msgs[2].reason).toBe('deadline');
    await recordFixture(ps, taskWorkflowId(r.body.taskId), 'taskLifecycle-deadline');
  }, 120_000);

  it('a long history continues as new with the task state carried; later steps work on the new run', async () => {
    const state = ps.app.market;
    state.taskTimings = { continueAsNewAfterEvents: 20, retryInitialMs: 200, retryMaximumMs: 1_000 };
    let task: Json;
    try {
      task = await postTask({ priceHbar: 1 });
    } finally {
      state.taskTimings = undefined;
    }
    const before = await balances();
    const handle = ps.t.client.workflow.getHandle(taskWorkflowId(task.taskId));
    const firstRun = (await handle.describe()).runId;
    await claimAndDeliver(task.taskId);
    const done = await post(`/market/tasks/${task.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    expect(done.status, JSON.stringify(done.body)).toBe(200);
    expect(done.body).toMatchObject({ status: 'completed', escrowStatus: 'released', claimerDid: claimer.did, resultBody: 'the summary' });
    const d = await handle.describe();
    expect(d.runId).not.toBe(firstRun);
    const after = await balances();
    const { claimerTinybars, feeTinybars } = payoutOf(100_000_000n, feeBps);
    expect(after.poster - before.poster).toBe(-100_000_000n);
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    // step numbers keep counting across runs: messages stay in order
    const msgs = await messagesOf(task.taskId);
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.delivered', 'task.completed']);
    expect(msgs.map((m) => m.seq)).toEqual([...new Set(msgs.map((m) => m.seq))].sort((a, b) => a - b));
  }, 120_000);

  it('a second API instance serves the same tasks from its own memory, kept current by NOTIFY', async () => {
    const second = await buildTestApp(
      { ...ps.stack.env, TEMPORAL_TASK_QUEUE: ps.t.taskQueue, RATE_LIMIT_MAX: '100000' },
      { sql: ps.sql, ledger: { ...ps.stack.ledger }, temporal: async () => ps.t.client },
    );
    try {
      const task = await postTask({ title: 'seen twice' });
      const read = async () => (await second.inject({ method: 'GET', url: `/market/tasks/${task.taskId}` })).json() as Json;
      expect((await read()).status).toBe('posted');
      // a step through the first instance shows on the second
      expect((await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
      let seen: Json = {};
      for (let i = 0; i < 100 && seen.status !== 'claimed'; i++) {
        seen = await read();
        if (seen.status !== 'claimed') await new Promise((res) => setTimeout(res, 100));
      }
      expect(seen).toMatchObject({ status: 'claimed', claimerDid: claimer.did });
      const list = (await second.inject({ method: 'GET', url: '/market/tasks?limit=1' })).json() as Json;
      expect(list.tasks[0].taskId).toBe(task.taskId);
      expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
    } finally {
      await second.close();
    }
  });

  it('a step route decides on the last written step (PostgreSQL), never on a memory copy that is a step behind', async () => {
    const ledger = { ...ps.stack.ledger };
    const second = await buildTestApp({ ...ps.stack.env, TEMPORAL_TASK_QUEUE: ps.t.taskQueue, RATE_LIMIT_MAX: '100000' }, { sql: ps.sql, ledger, temporal: async () => ps.t.client });
    try {
      const task = await postTask({ title: 'stale memory' });
      // this instance's memory keeps the task as posted (a NOTIFY that never arrives)
      const book = second.market.book;
      await book.ready();
      const stale = { ...task, status: 'posted', claimerDid: null } as never;
      book.get = () => stale;
      expect((await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
      const step = (path: string, body: Json) => second.inject({ method: 'POST', url: `/market/tasks/${task.taskId}/${path}`, payload: body });
      const delivered = await step('deliver-with-key', { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey, resultBody: 'done' });
      expect(delivered.statusCode, delivered.body).toBe(200);
      expect(delivered.json().status).toBe('delivered');
      // a second claim is refused from the written state (409), not accepted from the stale 'posted'
      const again = await step('claim-with-key', { claimerDid: other.did, claimerPrivateKey: other.privateKey });
      expect(again.statusCode).toBe(409);
      expect(again.json().code).toBe('market_task_already_claimed');
      const paid = await step('complete-with-key', { posterDid: poster.did, posterPrivateKey: poster.privateKey });
      expect(paid.statusCode, paid.body).toBe(200);
      expect(paid.json().status).toBe('completed');
    } finally {
      await second.close();
    }
  });

  it('a step still running after the bounded wait answers 202 with the task link; the task follows once a worker runs', async () => {
    const state = ps.app.market;
    worker.worker.shutdown();
    await worker.running;
    state.settings.workflowWaitMs = 1_500;
    let pending: { status: number; body: Json };
    try {
      pending = await signed('/market/tasks', poster, newTask({ title: 'no worker yet' }));
    } finally {
      state.settings.workflowWaitMs = 60_000;
      worker = await ps.startWorker();
    }
    expect(pending.status, JSON.stringify(pending.body)).toBe(202);
    expect(pending.body.code).toBe('request_pending');
    const poll = pending.body._links.poll.href as string;
    expect(poll).toMatch(/^\/market\/tasks\/[0-9a-f-]{36}$/);
    const taskId = poll.split('/').pop()!;
    const posted = await waitTask(taskId, (t) => t.status === 'posted' && t.escrowStatus === 'scheduled', 'posting after the worker started');
    expect(posted.title).toBe('no worker yet');
    expect((await signed(`/market/tasks/${taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
  }, 120_000);

  it('no private key reaches the workflow: the history of a keyed lifecycle holds signed bytes and ids only', async () => {
    const r = await post('/market/tasks/signed', { ...newTask({ priceHbar: 0.5 }), posterPrivateKey: poster.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const taskId = r.body.taskId as string;
    expect((await post(`/market/tasks/${taskId}/claim-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey })).status).toBe(200);
    expect((await post(`/market/tasks/${taskId}/deliver-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey, resultBody: 'ok' })).status).toBe(200);
    expect((await post(`/market/tasks/${taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey })).status).toBe(200);
    const history = await ps.t.client.workflow.getHandle(taskWorkflowId(taskId)).fetchHistory();
    const raw = Buffer.from(temporal.api.history.v1.History.encode(history).finish()).toString('latin1');
    expect(raw).toContain(taskId); // the search below can find what is there
    for (const a of [poster, claimer]) {
      const k = parsePrivateKey(a.privateKey, a.keyType);
      for (const form of [a.privateKey, k.toStringRaw(), k.toStringDer(), Buffer.from(k.toBytesRaw()).toString('base64')]) expect(raw).not.toContain(form);
    }
  });

  it('operators find tasks by search attributes and read the summary', async () => {
    const task = await postTask({ title: 'Operator view' });
    const handle = ps.t.client.workflow.getHandle(taskWorkflowId(task.taskId));
    const d = await handle.describe();
    expect(d.searchAttributes.TaskStatus).toEqual(['posted']);
    expect(d.searchAttributes.EscrowStatus).toEqual(['scheduled']);
    expect(d.searchAttributes.PosterDid).toEqual([poster.did]);
    expect(d.searchAttributes.PriceHbar).toEqual([3]);
    expect(await d.staticSummary()).toContain('Operator view');
    expect(await d.staticDetails()).toContain(poster.did);
    // the current details follow the steps (and survive continue-as-new)
    const meta = (await handle.query('__temporal_workflow_metadata')) as { currentDetails?: string };
    expect(meta.currentDetails).toContain('**Status** posted | **Escrow** scheduled');
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
    void TINY;
  });
});
