// The marketplace's promises and bounds end to end (issue 19 item 7; issue 20 items 2, 4, 10; DESIGN 11
// "Escrow promises", "Costs"): the trust ladder on posting and claiming, the posting caps (PostgreSQL),
// the claim, review and funding windows run by the real taskLifecycle workflow on localnet escrow
// (short windows: tests use seconds), verify reusing its outcome outside the step mutex, closed tasks
// leaving the in-memory book, and each agent's marketplace record on its directory entry and agent card,
// equal to what the marketplace topic gives.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { getAddress } from 'viem';
import { payoutOf, parseTaskMessage, type TaskMessage } from '../../domain/market.js';
import { marketRecordView, recordsFromMessages } from '../../domain/marketRecord.js';
import { sha256Hex } from '../../domain/hash.js';
import { createMarketVerifierActivities } from '../../activities/web/marketVerifier.js';
import { agentPassportAbi } from '../../evm/abis.js';
import type { TestAgent } from '../support/signing.js';
import { signedHeaders } from '../support/signing.js';
import { buildTestApp } from '../support/app.js';
import { mined, startTestChain, type TestChain } from '../evm/helpers.js';
import { buyPassport, getJson, postJson, recordFixture, startPassportStack, tinybarBalance, type PassportStack } from './passportHarness.js';
import { taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';

type Json = Record<string, any>;
const UNFUNDED_MAX = 3;
const POSTS_PER_DAY = 10;
const INCREASES_MAX = 2;

describe('marketplace promises and bounds (trust ladder, caps, claim/review/funding windows, verify, records)', () => {
  let ps: PassportStack;
  let poster: TestAgent; // gold, ED25519
  let claimer: TestAgent; // gold, ECDSA
  let bronze: TestAgent;
  let silver: TestAgent;
  let capped: TestAgent; // gold: the posting caps
  let claimer2: TestAgent; // gold, ECDSA
  let feeBps: number;
  let treasury: string;
  let escrow: string;
  let verifier: http.Server;
  let verifierUrl: string;
  /** requests the verifier got; a held one answers when release() is called */
  let verifierHits = 0;
  let held: (() => void)[] = [];
  let holding = false;

  const state = () => ps.app.market;
  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => postJson(ps, path, body, headers);
  const signed = async (path: string, signer: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, signer));
  const balance = (accountId: string) => tinybarBalance(ps, accountId);
  const newTask = (p: TestAgent, over: Json = {}) => ({ posterDid: p.did, title: 'Promised work', description: 'd', priceHbar: 2, capabilities: ['data_provide'], ...over });
  const eventually = async <T>(read: () => Promise<T>, pred: (x: T) => boolean, what: string, timeoutMs = 90_000): Promise<T> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const x = await read();
      if (pred(x)) return x;
      if (Date.now() > end) throw new Error(`${what} not reached: ${JSON.stringify(x)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  };
  const taskOf = async (taskId: string) => (await getJson(ps, `/market/tasks/${taskId}`)).body;
  const waitTask = (taskId: string, pred: (t: Json) => boolean, what: string) => eventually(() => taskOf(taskId), pred, `task ${taskId}: ${what}`);
  const allMessages = async (): Promise<TaskMessage[]> => {
    const raw = await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.marketplace, { limit: 10_000 });
    return raw.map((m) => parseTaskMessage(Buffer.from(m.message, 'base64').toString('utf8'))).filter((m): m is TaskMessage => m !== null);
  };
  const messagesOf = async (taskId: string) => (await allMessages()).filter((m) => m.taskId === taskId);
  /** Keeps the finished workflow's history as a replay fixture (test/workflows/taskReplay.test.ts). */
  const keepHistory = async (taskId: string, name: string) => {
    await ps.t.client.workflow.getHandle(taskWorkflowId(taskId)).result();
    await recordFixture(ps, taskWorkflowId(taskId), name);
  };
  /** Posts with windows (and timings) of a few seconds, as the tests of timers do. */
  async function postWith(windows: { claimSeconds?: number; reviewSeconds?: number; fundingSeconds?: number }, route: '/market/tasks' | '/market/tasks/signed', body: Json, p = poster) {
    const s = state();
    s.windows = windows;
    try {
      const r = route === '/market/tasks' ? await signed(route, p, body) : await post(route, { ...body, posterPrivateKey: p.privateKey });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    } finally {
      s.windows = undefined;
    }
  }

  beforeAll(async () => {
    ps = await startPassportStack('mpromise', {
      env: { MARKET_UNFUNDED_TASKS_MAX: String(UNFUNDED_MAX), MARKET_POSTS_PER_DAY: String(POSTS_PER_DAY), MARKET_REWARD_INCREASES_MAX: String(INCREASES_MAX) },
    });
    // the http verifier below listens on 127.0.0.1: this worker's verifier lifts the address rule (TRUST_ALLOW_PRIVATE)
    await ps.startWorker(createMarketVerifierActivities({ allowPrivate: true }) as never);
    [poster, claimer, bronze, silver, capped, claimer2] = ps.agents;
    const tiers: [TestAgent, string][] = [
      [poster, 'gold'],
      [claimer, 'gold'],
      [bronze, 'bronze'],
      [silver, 'silver'],
      [capped, 'platinum'],
      [claimer2, 'gold'],
    ];
    for (const [a, tier] of tiers) {
      const r = await buyPassport(ps, a, { tier });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    feeBps = Number(ps.stack.env.MARKET_FEE_BPS ?? 250);
    treasury = ps.stack.deployment.treasury;
    escrow = ps.stack.deployment.escrow;
    state().settings.workflowWaitMs = 30_000;
    verifier = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        verifierHits++;
        const answer = () => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ passed: true, reasons: [] }));
        if (holding) held.push(answer);
        else answer();
      });
    });
    await new Promise<void>((r) => verifier.listen(0, '127.0.0.1', r));
    verifierUrl = `http://127.0.0.1:${(verifier.address() as AddressInfo).port}/check`;
  }, 300_000);
  afterAll(async () => {
    for (const h of held) h();
    verifier?.closeAllConnections();
    await new Promise<void>((r) => (verifier ? verifier.close(() => r()) : r()));
    await ps?.stop();
  });

  it('the marketplace is for gold and platinum passports: bronze and silver get 403 market_tier_required naming gold, on every posting and claiming route', async () => {
    const refusals = [
      await signed('/market/tasks', bronze, newTask(bronze)),
      await post('/market/tasks/signed', { ...newTask(silver), posterPrivateKey: silver.privateKey }),
    ];
    const task = (await signed('/market/tasks', poster, newTask(poster))).body;
    expect(task.status, JSON.stringify(task)).toBe('posted');
    refusals.push(await signed(`/market/tasks/${task.taskId}/claim`, silver, { claimerDid: silver.did }));
    refusals.push(await post(`/market/tasks/${task.taskId}/claim-with-key`, { claimerDid: bronze.did, claimerPrivateKey: bronze.privateKey }));
    for (const r of refusals) {
      expect(r.status, JSON.stringify(r.body)).toBe(403);
      expect(r.body.code).toBe('market_tier_required');
      expect(r.body.hint).toMatch(/gold/);
      expect(r.body.hint).toMatch(/\/upgrade/);
    }
    // nothing was posted for them, and the task is still open to a gold claimer
    expect((await getJson(ps, `/market/tasks?posterDid=${encodeURIComponent(bronze.did)}`)).body.total).toBe(0);
    const ok = await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
  });

  it(`a poster has at most ${UNFUNDED_MAX} open unfunded tasks and ${POSTS_PER_DAY} posts a day: 429 in the error schema with the rate-limit headers`, async () => {
    const open: string[] = [];
    for (let i = 0; i < UNFUNDED_MAX; i++) {
      const r = await signed('/market/tasks', capped, newTask(capped, { title: `unfunded ${i}`, priceHbar: 1000, ...(i === 2 ? { escrow: false } : {}) }));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      open.push(r.body.taskId);
    }
    const refused = await fetch(`${ps.baseUrl}/market/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(await signedHeaders(ps.app, capped)) },
      body: JSON.stringify(newTask(capped, { title: 'one too many', priceHbar: 1000 })),
    });
    const body = (await refused.json()) as Json;
    expect(refused.status, JSON.stringify(body)).toBe(429);
    expect(body).toMatchObject({ code: 'market_unfunded_limit', retryable: true });
    expect(body.error).toMatch(/3 open unfunded tasks/);
    expect(body.hint).toMatch(/cancel/);
    expect(refused.headers.get('x-ratelimit-limit')).toBe(String(UNFUNDED_MAX));
    expect(refused.headers.get('x-ratelimit-remaining')).toBe('0');
    expect(Number(refused.headers.get('x-ratelimit-reset'))).toBeGreaterThan(Date.now() / 1000);
    // without escrow the signed variant is unfunded too
    const direct = await post('/market/tasks/signed', { ...newTask(capped, { priceHbar: 1, escrow: false }), posterPrivateKey: capped.privateKey });
    expect(direct.status, JSON.stringify(direct.body)).toBe(429);
    expect((await getJson(ps, `/market/tasks?posterDid=${encodeURIComponent(capped.did)}&limit=100`)).body.total).toBe(UNFUNDED_MAX);
    // a task funded at posting is not unfunded: accepted at the cap, when the poster's balance holds the price
    const poor = await post('/market/tasks/signed', { ...newTask(capped, { priceHbar: 100_000 }), posterPrivateKey: capped.privateKey });
    expect(poor.status, JSON.stringify(poor.body)).toBe(400);
    expect(poor.body.error).toMatch(/less than the price/);
    const funded = await post('/market/tasks/signed', { ...newTask(capped, { priceHbar: 1, title: 'funded at the cap' }), posterPrivateKey: capped.privateKey });
    expect(funded.status, JSON.stringify(funded.body)).toBe(200);
    expect(funded.body.escrowStatus).toBe('funded');
    expect((await signed(`/market/tasks/${funded.body.taskId}/cancel`, capped, { posterDid: capped.did })).status).toBe(200);
    // cancelling an unfunded one frees a place
    expect((await signed(`/market/tasks/${open[0]}/cancel`, capped, { posterDid: capped.did })).status).toBe(200);
    let posts = UNFUNDED_MAX + 1;
    const again = await signed('/market/tasks', capped, newTask(capped, { title: 'after a cancel' }));
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    posts++;
    // post and cancel until the day's quota is used
    let last = again.body.taskId as string;
    while (posts < POSTS_PER_DAY) {
      expect((await signed(`/market/tasks/${last}/cancel`, capped, { posterDid: capped.did })).status).toBe(200);
      const r = await signed('/market/tasks', capped, newTask(capped, { title: `post ${posts}` }));
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      last = r.body.taskId;
      posts++;
    }
    expect((await signed(`/market/tasks/${last}/cancel`, capped, { posterDid: capped.did })).status).toBe(200);
    const daily = await fetch(`${ps.baseUrl}/market/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...(await signedHeaders(ps.app, capped)) },
      body: JSON.stringify(newTask(capped, { title: 'over the day' })),
    });
    const dailyBody = (await daily.json()) as Json;
    expect(daily.status, JSON.stringify(dailyBody)).toBe(429);
    expect(dailyBody.code).toBe('market_post_quota_exceeded');
    expect(daily.headers.get('x-ratelimit-limit')).toBe(String(POSTS_PER_DAY));
    expect(Number(daily.headers.get('retry-after'))).toBeGreaterThan(0);
  }, 180_000);

  it(`increase-reward replaces a schedule at the operator's cost: at most ${INCREASES_MAX} times per task, then 400 with a hint`, async () => {
    const task = (await signed('/market/tasks', poster, newTask(poster, { priceHbar: 1 }))).body;
    for (let i = 1; i <= INCREASES_MAX; i++) {
      const up = await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 1 + i });
      expect(up.status, JSON.stringify(up.body)).toBe(200);
      expect(up.body.priceHbar).toBe(1 + i);
    }
    const over = await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 10 });
    expect(over.status, JSON.stringify(over.body)).toBe(400);
    expect(over.body).toMatchObject({ code: 'invalid_request' });
    expect(over.body.error).toMatch(/raised 2 times/);
    expect(over.body.hint).toMatch(/[Cc]ancel/);
    expect((await taskOf(task.taskId)).priceHbar).toBe(1 + INCREASES_MAX);
    expect((await messagesOf(task.taskId)).filter((m) => m.type === 'task.reward_increased')).toHaveLength(INCREASES_MAX);
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
  });

  it('review window: a delivered escrow task the poster leaves alone is paid to the claimer as a completion is; the deadline before it no longer refunds it', async () => {
    const before = { poster: await balance(poster.accountId), claimer: await balance(claimer.accountId), treasury: await balance(treasury), escrow: await balance(escrow) };
    const deadline = new Date(Date.now() + 8_000).toISOString();
    const task = await postWith({ reviewSeconds: 14 }, '/market/tasks/signed', newTask(poster, { priceHbar: 3, deadline }));
    expect(task).toMatchObject({ escrowStatus: 'funded', reviewWindowSeconds: 14, reviewEndsAt: null, fundingEndsAt: null });
    expect((await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    const d = await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'done, nobody looked' });
    expect(d.status, JSON.stringify(d.body)).toBe(200);
    // the task view states when the escrow goes to the claimer
    expect(Date.parse(d.body.reviewEndsAt) - Date.parse(d.body.deliveredAt)).toBe(14_000);
    expect(d.body._links.complete).toBeDefined();

    const done = await waitTask(task.taskId, (t) => t.status === 'completed' || t.status === 'cancelled', 'the end of the review window');
    expect(done).toMatchObject({ status: 'completed', escrowStatus: 'released', reviewEndsAt: null });
    expect(done.paymentTxId).toMatch(/^0\.0\.\d+@/);
    const { claimerTinybars, feeTinybars } = payoutOf(300_000_000n, feeBps);
    expect((await balance(poster.accountId)) - before.poster).toBe(-300_000_000n);
    expect((await balance(claimer.accountId)) - before.claimer).toBe(claimerTinybars);
    expect((await balance(treasury)) - before.treasury).toBe(feeTinybars);
    expect(await balance(escrow)).toBe(before.escrow);
    const msgs = await messagesOf(task.taskId);
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.delivered', 'task.completed']);
    expect(msgs[3]).toMatchObject({ reason: 'review window', paymentTxId: done.paymentTxId, claimerDid: claimer.did });

    // a closed task leaves the open tasks and stays in the book's window of recent closed ones (issue 31):
    // reads and the completed list answer it from memory, as PostgreSQL holds it
    const book = state().book;
    await eventually(async () => book.get(task.taskId), (t) => t?.status === 'completed', 'the completed task in the closed window');
    expect((await getJson(ps, `/market/tasks/${task.taskId}`)).body.status).toBe('completed');
    const listed = (await getJson(ps, `/market/tasks?status=completed&posterDid=${encodeURIComponent(poster.did)}&limit=100`)).body;
    expect(listed.tasks.map((t: Json) => t.taskId)).toContain(task.taskId);
    expect(book.all().some((t) => t.taskId === task.taskId)).toBe(false);
    await keepHistory(task.taskId, 'taskLifecycle-review-released');
  }, 120_000);

  it('claim window: a claim with no delivery lapses back to posted, and another agent can claim it', async () => {
    const task = await postWith({ claimSeconds: 3 }, '/market/tasks', newTask(poster, { title: 'claim me and forget' }));
    expect(task.claimWindowSeconds).toBe(3);
    const c = await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    expect(Date.parse(c.body.claimEndsAt) - Date.parse(c.body.updatedAt)).toBeGreaterThan(0);
    // (a read may still show the task as posted before the claim: wait for a step after the claim)
    const lapsed = await waitTask(task.taskId, (t) => t.status === 'posted' && Date.parse(t.updatedAt) > Date.parse(c.body.updatedAt), 'the claim lapses');
    expect(lapsed).toMatchObject({ claimerDid: null, claimEndsAt: null, escrowStatus: 'scheduled' });
    const msgs = await messagesOf(task.taskId);
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.expired']);
    expect(msgs[2]).toMatchObject({ status: 'posted', reason: 'claim window', claimerDid: claimer.did });
    // the lapsed claimer can no longer deliver; another agent claims it
    expect((await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'late' })).status).toBe(409);
    const again = await signed(`/market/tasks/${task.taskId}/claim`, claimer2, { claimerDid: claimer2.did });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.body).toMatchObject({ status: 'claimed', claimerDid: claimer2.did });
    const d = (await ps.t.client.workflow.getHandle(`task:${task.taskId}`).describe()).searchAttributes;
    expect(d.ClaimerDid).toEqual([claimer2.did]);
    expect((await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
    await keepHistory(task.taskId, 'taskLifecycle-claim-lapsed');
  }, 120_000);

  it('funding window: an escrow task still unfunded at its end is cancelled and its schedule deleted; a funded one stays', async () => {
    const unfunded = await postWith({ fundingSeconds: 4 }, '/market/tasks', newTask(poster, { title: 'never funded' }));
    expect(unfunded).toMatchObject({ escrowStatus: 'scheduled', fundingWindowSeconds: 4 });
    expect(Date.parse(unfunded.fundingEndsAt) - Date.parse(unfunded.createdAt)).toBeGreaterThan(0);
    const funded = await postWith({ fundingSeconds: 4 }, '/market/tasks/signed', newTask(poster, { title: 'funded at once', priceHbar: 1 }));
    expect(funded).toMatchObject({ escrowStatus: 'funded', fundingEndsAt: null });
    const ended = await waitTask(unfunded.taskId, (t) => t.status === 'cancelled', 'cancel at the end of the funding window');
    expect(ended.escrowStatus).toBe('cancelled');
    expect((await ps.stack.ledger.mirror.getSchedule(ended.scheduleId))!.deleted).toBe(true);
    const msgs = await messagesOf(unfunded.taskId);
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.expired']);
    expect(msgs[1]).toMatchObject({ status: 'cancelled', reason: 'funding window' });
    // the funded task's window passed too: it is still open
    expect((await taskOf(funded.taskId)).status).toBe('posted');
    expect((await signed(`/market/tasks/${funded.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
    await keepHistory(unfunded.taskId, 'taskLifecycle-funding-expired');
  }, 120_000);

  it('verify: repeated verifies of one delivery reuse the first outcome, write one topic message and never delay the poster', async () => {
    const body = '{"answer":42}';
    const t = (await signed('/market/tasks', poster, newTask(poster, { verifierType: 'sha256', verifierConfig: { sha256: sha256Hex(body) } }))).body;
    expect((await signed(`/market/tasks/${t.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    expect((await signed(`/market/tasks/${t.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: body })).status).toBe(200);
    const answers: Json[] = [];
    for (let i = 0; i < 4; i++) {
      const r = await post(`/market/tasks/${t.taskId}/verify`, {});
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      answers.push(r.body);
    }
    for (const a of answers) expect(a).toMatchObject({ passed: true, reasons: [], verificationAttempts: 1, verifiedAt: answers[0]!.verifiedAt });
    expect(answers.map((a) => a.reused)).toEqual([false, true, true, true]);
    expect((await messagesOf(t.taskId)).filter((m) => m.type === 'task.verified')).toHaveLength(1);
    expect((await taskOf(t.taskId)).verification).toMatchObject({ passed: true, runs: 1 });
    expect((await signed(`/market/tasks/${t.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);
    await keepHistory(t.taskId, 'taskLifecycle-verify-reused');

    // 20 anonymous verifies at once (the reproduction wrote 20 topic messages): one fetch of the poster's
    // verifier, one topic message, the same answer for all
    const burst = (await signed('/market/tasks', poster, newTask(poster, { priceHbar: 1, verifierType: 'http', verifierConfig: { url: verifierUrl } }))).body;
    expect((await signed(`/market/tasks/${burst.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    expect((await signed(`/market/tasks/${burst.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'r' })).status).toBe(200);
    const hitsBefore = verifierHits;
    const all = await Promise.all(Array.from({ length: 20 }, () => post(`/market/tasks/${burst.taskId}/verify`, {})));
    for (const r of all) expect(r.body, JSON.stringify(r.body)).toMatchObject({ passed: true, verificationAttempts: 1 });
    expect(verifierHits - hitsBefore).toBe(1);
    expect((await messagesOf(burst.taskId)).map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.delivered', 'task.verified']);
    expect((await signed(`/market/tasks/${burst.taskId}/cancel`, poster, { posterDid: poster.did })).status).toBe(200);

    // an http verifier that holds its answer: the poster's complete goes through meanwhile
    const slow = (await signed('/market/tasks', poster, newTask(poster, { priceHbar: 1, verifierType: 'http', verifierConfig: { url: verifierUrl } }))).body;
    expect((await signed(`/market/tasks/${slow.taskId}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    expect((await signed(`/market/tasks/${slow.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'r' })).status).toBe(200);
    holding = true;
    const hits = verifierHits;
    const verifying = post(`/market/tasks/${slow.taskId}/verify`, {});
    const second = post(`/market/tasks/${slow.taskId}/verify`, {});
    try {
      await eventually(async () => verifierHits, (n) => n > hits, 'the verifier is asked');
      const done = await post(`/market/tasks/${slow.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.body.status).toBe('completed');
    } finally {
      holding = false;
      for (const h of held.splice(0)) h();
    }
    const [v1] = await Promise.all([verifying, second]);
    expect(v1.status, JSON.stringify(v1.body)).toBe(200);
    expect(v1.body.passed).toBe(true);
    // two verifies sent together (the second shares the first's run, or finds the task completed): the verifier ran once
    expect(verifierHits - hits).toBe(1);
  }, 120_000);

  it("every agent's directory entry and agent card carry its marketplace record, equal to the marketplace topic's", async () => {
    const register = async (a: TestAgent, name: string) => {
      const r = await signed('/agents/register', a, { did: a.did, name, capabilities: ['api_call'], endpoint: `https://${name}.example/a2a` });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body;
    };
    const entry = await register(claimer, 'promise-claimer');
    expect(entry.marketplace).toBeDefined();
    await register(poster, 'promise-poster');
    const fromTopic = recordsFromMessages(await allMessages());
    for (const a of [poster, claimer, claimer2, capped]) {
      const want = marketRecordView(fromTopic.get(a.did));
      if (a === poster || a === claimer) {
        const got = await eventually(async () => (await getJson(ps, `/agents/${encodeURIComponent(a.did)}`)).body, (e) => JSON.stringify(e.marketplace) === JSON.stringify(want), `record of ${a.did}`);
        expect(got.marketplace).toEqual(want);
        const listed = ((await getJson(ps, '/agents?limit=100')).body.agents as Json[]).find((x) => x.did === a.did);
        expect(listed?.marketplace).toEqual(want);
      }
    }
    // what the earlier tests did, as the topic tells it
    expect(marketRecordView(fromTopic.get(claimer.did)).asClaimer).toEqual({ delivered: 4, paid: 2 });
    expect(marketRecordView(fromTopic.get(poster.did)).asPoster).toMatchObject({ completed: 2, cancelledAfterDelivery: 2 });

    // the agent card of the claimer's EVM address (its ECDSA alias) carries the claimer's record
    let chain: TestChain | undefined;
    let app: Awaited<ReturnType<typeof buildTestApp>> | undefined;
    try {
      chain = await startTestChain({ chainId: 31337 });
      const address = getAddress((claimer as TestAgent & { evmAddress: string }).evmAddress);
      await mined(chain, chain.wallets[0]!.writeContract({ address: chain.addresses.passport, abi: agentPassportAbi, functionName: 'mint', args: [address, 1, ['api_call'], 3, 'ipfs://card'] }));
      app = await buildTestApp(
        { ...ps.stack.env, RATE_LIMIT_MAX: '100000', EVM_RPC_URL: chain.anvil.rpcUrl, EVM_CHAIN_ID: '31337', PASSPORT_CONTRACT_ADDRESS: chain.addresses.passport, ESCROW_CONTRACT_ADDRESS: chain.addresses.escrow },
        { sql: ps.sql, ledger: { ...ps.stack.ledger }, temporal: async () => ps.t.client },
      );
      const did = `did:pkh:eip155:31337:${address}`;
      const card = await eventually(
        async () => (await app!.inject({ method: 'GET', url: `/api/agent/${encodeURIComponent(did)}/card` })).json() as Json,
        (c) => c.marketplace !== undefined,
        'the card',
      );
      expect(card).toMatchObject({ id: did, tier: 3, revoked: false });
      expect(card.marketplace).toEqual(marketRecordView(fromTopic.get(claimer.did)));
    } finally {
      await app?.close();
      await chain?.anvil.stop();
    }
  }, 180_000);
});
