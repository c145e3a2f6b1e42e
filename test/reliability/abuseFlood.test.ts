// The abuse flood (issue 20, "Deliver", third bullet): the anonymous routes, and the cheap signed
// routes the issue names, driven from many real source addresses (client sockets bound to
// 127.x.y.z, TRUST_PROXY unset, so every per-address quota sees the real address) against two API
// instances sharing PostgreSQL and Redis. Everything the operator could be made to pay is measured
// outside the API, and each measure is held against the bound docs/costs.md documents, computed from
// the configuration this test gives the instances (small quotas so the flood is short):
//   - ledger: every transaction the operator paid or moved HBAR in since the flood began (localnet
//     mirror), by kind, and the operator's, treasury's and escrow's balances (SDK queries);
//   - Temporal: the workflows started on this test's task queue (visibility), the calls each instance
//     made (its own gRPC connection, counted);
//   - outbound: the queries reaching the test DNS server, the requests reaching the test sites and
//     the task verifier;
//   - EVM: the attester's nonce and anvil's block number;
//   - PostgreSQL: the rows of the tables the routes write, and the statements the instances sent.
// The flood always sends more than the bounds allow, so each bound is reached, not just respected.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import type { Hex } from 'viem';
import { createEvmActivities } from '../../activities/evm/index.js';
import { createMarketVerifierActivities } from '../../activities/web/marketVerifier.js';
import { PROBE_IDS } from '../../domain/trust/rules.js';
import { isPortOpen } from '../../scripts/lib/ports.js';
import { buildTestApp, testConfig } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { startTestDns, type TestDnsServer } from '../support/testDns.js';
import { startTestSite, type TestSite } from '../support/testSite.js';
import { startTestChain, type TestChain } from '../evm/helpers.js';
import { buyPassport, postJson, startPassportStack, tinybarBalance, type PassportStack } from '../e2e/passportHarness.js';
import {
  countingSql,
  countingTemporal,
  interleaveByAddress,
  LoopbackClient,
  loopbackAddress,
  loopbackAddresses,
  netOf,
  statusesByAddress,
  topicMessagesSince,
  transactionsOf,
  windowsSpanned,
  workflowsStartedSince,
  type CountingSql,
  type CountingTemporal,
  type FloodAnswer,
  type FloodCall,
} from './abuseFlood.js';

type Json = Record<string, any>;

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;
/** docs/costs.md: a new trust scan is 12 fetches (the test sites never redirect, so one request each) */
const FETCHES_PER_SCAN = PROBE_IDS.length;
/** docs/costs.md: 1 A/AAAA lookup, then each of the 12 fetches its own A/AAAA lookup, each fetch following at most 3 redirects */
const DNS_QUERIES_PER_SCAN = 2 * (1 + FETCHES_PER_SCAN * (1 + 3));

/** The configuration of both API instances (and the bounds below are computed from it). */
const LIMITS = {
  RATE_LIMIT_MAX: 12,
  RATE_LIMIT_WINDOW_MS: HOUR_MS,
  TRUST_CHALLENGES_DAILY_PER_IP: 3,
  TRUST_SCANS_DAILY_PER_IP: 2,
  TRUST_SCANS_HOURLY_PER_SITE: 3,
  TRUST_SNAPSHOT_TTL_MS: 600_000,
  TRUST_VERIFY_DAILY_PER_DID: 2,
  TRUST_VERIFY_DAILY_PER_IP: 3,
  TRUST_ATTEST_DAILY_PER_DID: 1,
  REGISTER_DAILY_CAP_PER_IP: 2,
  SPONSORED_DAILY_BUDGET: 2,
  CONTACT_HOURLY_CAP_PER_IP: 2,
  A2A_OPERATOR_DAILY_BYTES: 2048,
  MARKET_UNFUNDED_TASKS_MAX: 2,
  MARKET_VERIFY_RUNS_MAX: 2,
};
const INSTANCES = 2;

const redisUp = await isPortOpen(6379);
if (!redisUp) console.warn('[abuseFlood] Redis is not reachable on 127.0.0.1:6379: the abuse flood is skipped (the instances share their rate limit there)');

const run = Math.random().toString(36).slice(2, 8);
const CHAIN_ID = 800_000 + Math.floor(Math.random() * 90_000);
const WILD = `wild-${run}.test`;
const HOT = `hot-${run}.test`;
const OWN = `own-${run}.test`;
const ATTEST = `attest-${run}.test`;
/** wildcard subdomains of one site: each address asks for its own */
const wildName = (a: number, k: number) => `w${a}-${k}.${WILD}`;
const WILD_ADDRESSES = 8;
const WILD_PER_ADDRESS = 3;

/** An http verifier whose answers the test holds back until it releases them. */
interface HeldVerifier {
  url: string;
  requests(): number;
  /** resolves at the first request */
  firstRequest: Promise<void>;
  release(): void;
  close(): Promise<void>;
}
async function startHeldVerifier(): Promise<HeldVerifier> {
  let requests = 0;
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let first!: () => void;
  const firstRequest = new Promise<void>((r) => (first = r));
  const server = http.createServer((req, res) => {
    requests++;
    first();
    req.resume();
    req.on('end', () => void released.then(() => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ passed: true, reasons: [] }))));
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/verify`,
    requests: () => requests,
    firstRequest,
    release,
    close: () =>
      new Promise<void>((r) => {
        release();
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}

interface Instance {
  app: FastifyInstance;
  url: string;
  pg: CountingSql;
  temporal: CountingTemporal;
}

describe.skipIf(!redisUp)('abuse flood: many source addresses, two API instances, the operator pays within the documented bounds', () => {
  let ps: PassportStack;
  let chain: TestChain;
  let dns: TestDnsServer;
  let wildSite: TestSite;
  let hotSite: TestSite;
  let ownSite: TestSite;
  let attestSite: TestSite;
  let verifier: HeldVerifier;
  let redis: Redis;
  let instances: Instance[] = [];
  let client: LoopbackClient;
  let poster: TestAgent; // gold: posts the verified task, sends A2A, attests
  let claimer: TestAgent; // gold: claims and delivers; floods unfunded posts
  let sponsor: TestAgent; // owner of the signed registrations
  let prover: TestAgent; // floods verify-ownership
  let attester: { address: Hex; privateKey: Hex };
  let taskId: string;
  let ownToken: string;

  const ok = (r: { status: number; body: Json }, status = 200) => {
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    return r.body;
  };
  const signedVia = async (agent: TestAgent) => signedHeaders(ps.app, agent);

  beforeAll(async () => {
    ps = await startPassportStack('aflood');
    [poster, claimer, sponsor, prover] = ps.agents as [TestAgent, TestAgent, TestAgent, TestAgent];
    chain = await startTestChain({ chainId: CHAIN_ID });
    attester = { address: chain.anvil.accounts[0]!.address as Hex, privateKey: chain.anvil.accounts[0]!.privateKey };
    dns = await startTestDns();
    [wildSite, hotSite, ownSite, attestSite] = await Promise.all([startTestSite(), startTestSite(), startTestSite(), startTestSite()]);
    for (const s of [wildSite, hotSite, ownSite, attestSite]) s.files.set('/robots.txt', 'User-agent: *\nAllow: /\n');
    verifier = await startHeldVerifier();

    const origins = [
      ...Array.from({ length: WILD_ADDRESSES * WILD_PER_ADDRESS }, (_, i) => `${wildName(Math.floor(i / WILD_PER_ADDRESS), i % WILD_PER_ADDRESS)}=${wildSite.origin}`),
      `${HOT}=${hotSite.origin}`,
      `${OWN}=${ownSite.origin}`,
      `${ATTEST}=${attestSite.origin}`,
    ];
    const env: Record<string, string> = {
      ...ps.stack.env,
      ...Object.fromEntries(Object.entries(LIMITS).map(([k, v]) => [k, String(v)])),
      TEMPORAL_TASK_QUEUE: ps.t.taskQueue,
      AUTH_CHALLENGE_SWEEP_MS: String(HOUR_MS), // rows stay for the count
      TRUST_ALLOW_PRIVATE: 'true',
      TRUST_DNS_SERVERS: dns.address,
      TRUST_FETCH_ORIGINS: origins.join(','),
      EVM_RPC_URL: chain.anvil.rpcUrl,
      EVM_CHAIN_ID: String(CHAIN_ID),
      PASSPORT_CONTRACT_ADDRESS: chain.addresses.passport,
      ESCROW_CONTRACT_ADDRESS: chain.addresses.escrow,
      INDEXER_CONFIRMATIONS: '0',
      EVM_ATTESTER_KEY: attester.privateKey,
    };
    expect(env.TRUST_PROXY).toBeUndefined();
    // the worker: the harness's activities, the verifier allowed to reach 127.0.0.1, the attestation's EVM activities
    await ps.startWorker({ ...createMarketVerifierActivities({ allowPrivate: true }), ...createEvmActivities({ config: testConfig(env), sql: ps.sql }) } as never);

    for (const a of [poster, claimer]) ok(await buyPassport(ps, a, { tier: 'gold' }));
    // the delivered task the flood verifies (through the harness's own API)
    const task = ok(await postJson(ps, '/market/tasks', { posterDid: poster.did, title: 'flood verify', priceHbar: 1, escrow: false, verifierType: 'http', verifierConfig: { url: verifier.url } }, await signedVia(poster)));
    taskId = task.taskId;
    ok(await postJson(ps, `/market/tasks/${taskId}/claim`, { claimerDid: claimer.did }, await signedVia(claimer)));
    ok(await postJson(ps, `/market/tasks/${taskId}/deliver`, { claimerDid: claimer.did, resultBody: 'the answer is 42' }, await signedVia(claimer)));

    // two API instances: each its own PostgreSQL pool and Temporal connection (both counted), one Redis
    redis = new Redis('redis://127.0.0.1:6379', { keyPrefix: `abuse-flood-${randomUUID()}-`, maxRetriesPerRequest: 2 });
    for (let i = 0; i < INSTANCES; i++) {
      const pg = countingSql(ps.databaseUrl);
      const temporal = await countingTemporal(inject('temporalAddress'));
      // its own ledger context object: the API keeps per-process state (task book, caches) per context
      const app = await buildTestApp(env, { sql: pg.sql, ledger: { ...ps.stack.ledger }, temporal: async () => temporal.client, redis });
      const url = await app.listen({ host: '127.0.0.1', port: 0 });
      instances.push({ app, url, pg, temporal });
    }
    client = new LoopbackClient(instances.map((i) => i.url));

    // set-up through the instances from an address of its own: the attester proves its domain; the
    // prover gets the challenge it will flood verify-ownership with (never published)
    const setup = loopbackAddress(0, 0);
    const send = async (call: Omit<FloodCall, 'address'>) => {
      const a = await client.send({ ...call, address: setup, instance: 0 });
      return { status: a.status, body: a.body as Json };
    };
    const ch = ok(await send({ path: `/api/trust/${ATTEST}/challenge?did=${encodeURIComponent(poster.did)}` }));
    dns.setTxt(`_agent-passport.${ATTEST}`, [ch.well_known_content]);
    ok(await send({ method: 'POST', path: `/api/trust/${ATTEST}/verify-ownership`, body: { did: poster.did, token: ch.token }, headers: await signedVia(poster) }));
    ownToken = ok(await send({ path: `/api/trust/${OWN}/challenge?did=${encodeURIComponent(prover.did)}` })).token;
    // both instances see the delivered task
    for (let i = 0; i < INSTANCES; i++) {
      const seen = await eventually(
        () => client.send({ address: setup, instance: i, path: `/market/tasks/${taskId}` }),
        (a) => a.body?.status === 'delivered',
        30_000,
        100,
      );
      expect(seen.body.status).toBe('delivered');
    }
  }, 300_000);

  afterAll(async () => {
    client?.close();
    for (const i of instances) {
      await i.app.close();
      await i.temporal.close();
      await i.pg.end();
    }
    redis?.disconnect();
    // the task workflows this file started (they would wait for their windows for a day)
    if (ps) {
      for await (const w of ps.t.client.workflow.list({ query: `TaskQueue = '${ps.t.taskQueue}' AND ExecutionStatus = 'Running'` })) {
        await ps.t.client.workflow.getHandle(w.workflowId).terminate('abuse flood over').catch(() => undefined);
      }
    }
    await ps?.stop();
    await chain?.anvil.stop();
    await dns?.close();
    for (const s of [wildSite, hotSite, ownSite, attestSite]) await s?.close();
    await verifier?.close();
  });

  it('drives every anonymous route (and the cheap signed ones) far past its quota; every measured spend stays within its bound', async () => {
    const { operator, treasury, escrow, topics } = ps.stack.deployment;
    const balances = async () => ({ operator: await tinybarBalance(ps, operator.accountId), treasury: await tinybarBalance(ps, treasury), escrow: await tinybarBalance(ps, escrow) });
    const evm = async () => ({ nonce: await chain.publicClient.getTransactionCount({ address: attester.address, blockTag: 'latest' }), block: await chain.publicClient.getBlockNumber() });
    const rows = async () => {
      const [r] = await ps.sql`
        select
          (select count(*)::int from domain_challenges where domain like ${`c%-${run}.test`}) as challenges,
          (select count(*)::int from registry_keys where owner is null) as plain_registrations,
          (select count(*)::int from registry_keys where owner is not null) as sponsored_registrations,
          (select count(*)::int from contact_messages) as contact_messages,
          (select count(*)::int from auth_challenges where did like 'did:hedera:local:0.0.99%') as auth_challenges`;
      return r as { challenges: number; plain_registrations: number; sponsored_registrations: number; contact_messages: number; auth_challenges: number };
    };

    // ---------------------------------------------------------------- before (the set-up's workflows are done: only the task's runs)
    const settled = await eventually(
      async () => {
        const running: string[] = [];
        for await (const w of ps.t.client.workflow.list({ query: `TaskQueue = '${ps.t.taskQueue}' AND ExecutionStatus = 'Running'` })) if (w.type !== 'taskLifecycle') running.push(w.type);
        return running;
      },
      (r) => r.length === 0,
      60_000,
      250,
    );
    expect(settled).toEqual([]);
    const ledgerBefore = await balances();
    const evmBefore = await evm();
    const rowsBefore = await rows();
    const dnsBefore = dns.queried();
    const sitesBefore = { wild: wildSite.requests(), hot: hotSite.requests(), own: ownSite.requests(), attest: attestSite.requests() };
    const readinessBefore = instances.map((i) => ({ select1: i.pg.count(/^select 1$/), systemInfo: i.temporal.count('GetSystemInfo') }));
    const startedAt = Date.now();

    // ---------------------------------------------------------------- the calls, one address group per route
    const perAddress = (group: number, count: number, calls: (address: string, a: number) => Omit<FloodCall, 'address'>[]) =>
      loopbackAddresses(group, count).map((address, a) => calls(address, a).map((c) => ({ ...c, address })));
    const authDid = (a: number) => `did:hedera:local:0.0.99${String(a).padStart(4, '0')}`;

    const groups: Record<string, FloodCall[][]> = {
      // ownership challenges for many names (some bound to a DID): 6 new names per address
      challenge: perAddress(1, 12, (_x, a) => Array.from({ length: 6 }, (_, k) => ({ path: `/api/trust/c${a}-${k}-${run}.test/challenge${k % 2 ? `?did=${encodeURIComponent(prover.did)}` : ''}` }))),
      // uncached scans of names that do not resolve: 5 per address, each its own site
      scan: perAddress(2, 10, (_x, a) => Array.from({ length: 5 }, (_, k) => ({ path: `/api/trust/s${a}-${k}-${run}.test` }))),
      // uncached scans of wildcard subdomains of one site
      wildcard: perAddress(3, WILD_ADDRESSES, (_x, a) => Array.from({ length: WILD_PER_ADDRESS }, (_, k) => ({ path: `/api/trust/${wildName(a, k)}` }))),
      // one domain read again and again: cached after one scan per instance
      cached: perAddress(4, 8, () => Array.from({ length: 6 }, () => ({ path: `/api/trust/${HOT}` }))),
      // plain registrations and registrations naming an owner without its signature
      register: perAddress(6, 10, (_x, a) => Array.from({ length: 5 }, (_, k) => ({ method: 'POST', path: '/api/v1/agents/register', body: k % 2 ? { name: `flood-${a}-${k}`, owner: sponsor.did } : { name: `flood-${a}-${k}` } }))),
      ready: perAddress(8, 8, () => Array.from({ length: 40 }, () => ({ path: '/health/ready' }))),
      contact: perAddress(9, 10, (_x, a) => Array.from({ length: 5 }, (_, k) => ({ method: 'POST', path: '/contact', body: { name: `Flood ${a}`, email: `flood${a}@example.org`, message: `message ${k}` } }))),
      // sign-in challenges (one PostgreSQL row each): past the per-address rate limit
      authChallenge: perAddress(10, 8, (_x, a) => Array.from({ length: LIMITS.RATE_LIMIT_MAX + 6 }, () => ({ path: `/auth/challenge?did=${authDid(a)}` }))),
      // the feed and search (memory): past the per-address rate limit
      feedSearch: perAddress(11, 8, () => Array.from({ length: LIMITS.RATE_LIMIT_MAX + 6 }, (_, k) => ({ path: k % 2 ? '/feed' : '/api/search?q=flood' }))),
    };
    // the signed ones (each request its own fresh sign-in challenge)
    const signedGroup = async (group: number, count: number, agent: TestAgent, call: (a: number) => Omit<FloodCall, 'address' | 'headers'>) => {
      const out: FloodCall[][] = [];
      for (const [a, address] of loopbackAddresses(group, count).entries()) out.push([{ ...call(a), address, headers: await signedVia(agent) }]);
      return out;
    };
    groups.verifyOwnership = await signedGroup(12, 8, prover, () => ({ method: 'POST', path: `/api/trust/${OWN}/verify-ownership`, body: { did: prover.did, token: ownToken } }));
    groups.sponsored = await signedGroup(7, 6, sponsor, (a) => ({ method: 'POST', path: '/api/v1/agents/register', body: { name: `sponsored-${a}`, owner: sponsor.did } }));
    groups.a2a = await signedGroup(13, 8, poster, (a) => ({ method: 'POST', path: '/a2a/send', body: { from: poster.did, to: claimer.did, body: `flood message ${a} ${'x'.repeat(300)}` } }));
    groups.post = await signedGroup(14, 6, claimer, (a) => ({ method: 'POST', path: '/market/tasks', body: { posterDid: claimer.did, title: `unfunded ${a}`, priceHbar: 1000 } }));
    groups.attest = await signedGroup(15, 6, poster, () => ({ method: 'POST', path: `/api/trust/${ATTEST}/attest`, body: { did: poster.did } }));

    // anonymous verifies of the delivered task: a first wave while the verifier holds its answer
    // (all of them arrive before any outcome is kept), then a second wave
    const verifyAddresses = loopbackAddresses(5, 16);
    const verifyCalls = (): FloodCall[] => verifyAddresses.flatMap((address) => [0, 1].map((instance) => ({ address, instance, method: 'POST' as const, path: `/market/tasks/${taskId}/verify`, body: {} })));
    const rateCounted = async (addresses: string[]) => (await Promise.all(addresses.map((a) => redis.get(`agent-passport-rl-${a}`)))).reduce((s, v) => s + Number(v ?? 0), 0);
    const taskWorkflow = `task:${taskId}`;
    const verifyUpdates = () => instances.reduce((s, i) => s + i.temporal.count('UpdateWorkflowExecution', taskWorkflow), 0);
    let updatesWhileHeld = -1;
    const verifyFlood = async () => {
      const wave1 = verifyCalls();
      const answers1 = client.flood(wave1, wave1.length);
      await Promise.race([verifier.firstRequest, answers1]);
      // every request of the wave has been counted by the rate limit (it reached the instance) before the verifier answers
      await eventually(() => rateCounted(verifyAddresses), (n) => n >= wave1.length, 30_000, 20);
      updatesWhileHeld = verifyUpdates();
      verifier.release();
      const first = await answers1;
      const second = await client.flood(verifyCalls(), 8);
      return [...first, ...second];
    };

    // ---------------------------------------------------------------- the flood: every group at once
    const entries = Object.entries(groups);
    const [verifyAnswers, ...groupAnswers] = await Promise.all([verifyFlood(), ...entries.map(([, calls]) => client.flood(interleaveByAddress(calls), 8))]);
    const answers: Record<string, FloodAnswer[]> = Object.fromEntries(entries.map(([name], i) => [name, groupAnswers[i]!]));
    answers.verify = verifyAnswers;

    // the workflows it started have done their work (the task workflows keep running)
    const closedKinds = ['sponsoredRegistration', 'a2aMessage', 'trustAttest'];
    await eventually(
      async () => {
        let running = 0;
        for await (const w of ps.t.client.workflow.list({ query: `TaskQueue = '${ps.t.taskQueue}' AND ExecutionStatus = 'Running'` })) if (closedKinds.includes(w.type)) running++;
        return running;
      },
      (n) => n === 0,
      90_000,
      250,
    );
    const endedAt = Date.now();
    const days = windowsSpanned(DAY_MS, startedAt, endedAt);
    const hours = windowsSpanned(HOUR_MS, startedAt, endedAt);

    // ---------------------------------------------------------------- every answer is one the route documents
    const expected: Record<string, number[]> = {
      challenge: [200, 429],
      scan: [404, 429],
      wildcard: [200, 429],
      cached: [200],
      verify: [200],
      register: [200, 429],
      sponsored: [200, 429],
      ready: [200],
      contact: [201, 429],
      authChallenge: [200, 429],
      feedSearch: [200, 429],
      verifyOwnership: [403, 429],
      a2a: [200, 202, 429],
      post: [200, 429],
      attest: [200, 202, 429],
    };
    for (const [name, list] of Object.entries(answers)) {
      const unexpected = list.filter((a) => !expected[name]!.includes(a.status));
      expect(unexpected.map((a) => `${a.status} ${JSON.stringify(a.body).slice(0, 200)}`), name).toEqual([]);
      for (const a of list.filter((x) => x.status === 429)) {
        // refusals in the error schema with the rate-limit headers (register: Retry-After)
        expect(typeof a.body.error, name).toBe('string');
        expect(typeof a.body.hint, name).toBe('string');
        expect(Number(a.headers['retry-after']), name).toBeGreaterThan(0);
      }
    }
    const passed = (name: string, status = 200) => answers[name]!.filter((a) => a.status === status);
    const perAddressMax = (name: string, status: number) => Math.max(...[...statusesByAddress(answers[name]!).values()].map((c) => c[status] ?? 0));
    const codesOf = (name: string) => new Set(answers[name]!.filter((a) => a.status >= 400).map((a) => a.body.code));

    // ---------------------------------------------------------------- quotas held per address, across both instances
    expect(perAddressMax('challenge', 200)).toBeLessThanOrEqual(LIMITS.TRUST_CHALLENGES_DAILY_PER_IP * days);
    expect(codesOf('challenge')).toEqual(new Set(['trust_quota_exceeded']));
    expect(perAddressMax('scan', 404)).toBeLessThanOrEqual(LIMITS.TRUST_SCANS_DAILY_PER_IP * days);
    expect(codesOf('scan')).toEqual(new Set(['trust_domain_not_found', 'trust_quota_exceeded']));
    expect(passed('wildcard').length).toBeLessThanOrEqual(LIMITS.TRUST_SCANS_HOURLY_PER_SITE * hours);
    expect(codesOf('wildcard')).toEqual(new Set(['trust_quota_exceeded']));
    expect(perAddressMax('register', 200)).toBeLessThanOrEqual(LIMITS.REGISTER_DAILY_CAP_PER_IP);
    expect(codesOf('register')).toEqual(new Set(['register_rate_limited']));
    // an owner without the owner's signature is not recorded: nothing sponsored
    for (const a of passed('register')) expect(a.body).toMatchObject({ owner: null, sponsored: false });
    expect(perAddressMax('contact', 201)).toBeLessThanOrEqual(LIMITS.CONTACT_HOURLY_CAP_PER_IP);
    expect(perAddressMax('authChallenge', 200)).toBeLessThanOrEqual(LIMITS.RATE_LIMIT_MAX);
    expect(codesOf('authChallenge')).toEqual(new Set(['rate_limit_exceeded']));
    expect(perAddressMax('feedSearch', 200)).toBeLessThanOrEqual(LIMITS.RATE_LIMIT_MAX);
    expect(codesOf('feedSearch')).toEqual(new Set(['rate_limit_exceeded']));
    expect(passed('verifyOwnership', 403).length).toBeLessThanOrEqual(LIMITS.TRUST_VERIFY_DAILY_PER_DID * days);
    expect(codesOf('verifyOwnership')).toEqual(new Set(['trust_ownership_not_proven', 'trust_quota_exceeded']));
    expect(passed('sponsored').length).toBeLessThanOrEqual(LIMITS.SPONSORED_DAILY_BUDGET * days);
    for (const a of passed('sponsored')) expect(a.body).toMatchObject({ owner: sponsor.did, sponsored: true });
    expect(codesOf('sponsored')).toEqual(new Set(['sponsored_quota_exceeded']));
    expect(passed('post').length).toBeLessThanOrEqual(LIMITS.MARKET_UNFUNDED_TASKS_MAX);
    expect(codesOf('post')).toEqual(new Set(['market_unfunded_limit']));
    expect(codesOf('a2a')).toEqual(new Set(['a2a_operator_budget_exceeded']));
    expect(codesOf('attest')).toEqual(new Set(['trust_quota_exceeded']));
    // every verify got the one outcome
    for (const a of answers.verify!) expect(a.body).toMatchObject({ taskId, passed: true, verificationAttempts: 1 });

    // ---------------------------------------------------------------- outbound requests
    const dnsAfter = dns.queried();
    const queriedNow = [...dnsAfter].map(([name, n]) => [name, n - (dnsBefore.get(name) ?? 0)] as const).filter(([, n]) => n > 0);
    const queriedNames = new Map(queriedNow);
    // challenges look nothing up; wildcard, cached and attest scans go to their sites (no lookup here)
    const scanned = queriedNow.filter(([name]) => /^s\d+-\d+-/.test(name));
    const ownTxt = queriedNames.get(`_agent-passport.${OWN}`) ?? 0;
    expect(queriedNow.filter(([name]) => !/^s\d+-\d+-/.test(name) && name !== `_agent-passport.${OWN}`)).toEqual([]);
    expect(scanned.length).toBeLessThanOrEqual(LIMITS.TRUST_SCANS_DAILY_PER_IP * groups.scan!.length * days);
    expect(scanned.reduce((s, [, n]) => s + n, 0)).toBeLessThanOrEqual(DNS_QUERIES_PER_SCAN * LIMITS.TRUST_SCANS_DAILY_PER_IP * groups.scan!.length * days);
    // ownership checks: one TXT query and one fetch of the well-known file each
    expect(ownTxt).toBeLessThanOrEqual(LIMITS.TRUST_VERIFY_DAILY_PER_DID * days);
    expect(ownSite.requests() - sitesBefore.own).toBeLessThanOrEqual(LIMITS.TRUST_VERIFY_DAILY_PER_DID * days);
    // wildcard subdomains share their site's hourly quota
    expect(wildSite.requests() - sitesBefore.wild).toBeLessThanOrEqual(FETCHES_PER_SCAN * LIMITS.TRUST_SCANS_HOURLY_PER_SITE * hours);
    // a cached domain is scanned once per instance per TRUST_SNAPSHOT_TTL_MS
    const ttlPeriods = 1 + Math.floor((endedAt - startedAt) / LIMITS.TRUST_SNAPSHOT_TTL_MS);
    expect(hotSite.requests() - sitesBefore.hot).toBeLessThanOrEqual(FETCHES_PER_SCAN * INSTANCES * ttlPeriods);
    expect(attestSite.requests() - sitesBefore.attest).toBeLessThanOrEqual(FETCHES_PER_SCAN * LIMITS.TRUST_SCANS_HOURLY_PER_SITE * hours);
    // the verifier ran once for the delivery (a passed outcome is final), at most MARKET_VERIFY_RUNS_MAX
    expect(verifier.requests()).toBeLessThanOrEqual(LIMITS.MARKET_VERIFY_RUNS_MAX);
    expect(verifier.requests()).toBe(1);

    // ---------------------------------------------------------------- Temporal
    // concurrent verifies on one instance share one Update: while the run was held, at most one per instance reached the workflow
    expect(updatesWhileHeld).toBeGreaterThanOrEqual(1);
    expect(updatesWhileHeld).toBeLessThanOrEqual(INSTANCES);
    const started = await workflowsStartedSince(ps.t.client, ps.t.taskQueue, startedAt);
    const a2aSent = answers.a2a!.filter((a) => a.status === 200 || a.status === 202).length;
    const workflowBounds: Record<string, number> = {
      taskLifecycle: LIMITS.MARKET_UNFUNDED_TASKS_MAX,
      sponsoredRegistration: LIMITS.SPONSORED_DAILY_BUDGET * days,
      a2aMessage: a2aSent,
      trustAttest: LIMITS.TRUST_ATTEST_DAILY_PER_DID * days,
    };
    for (const [type, ids] of started) expect(ids.length, `${type} workflows started`).toBeLessThanOrEqual(workflowBounds[type] ?? 0);
    const starts = instances.reduce((s, i) => s + i.temporal.count('StartWorkflowExecution') + i.temporal.count('SignalWithStartWorkflowExecution') + i.temporal.count('ExecuteMultiOperation'), 0);
    expect(starts).toBeLessThanOrEqual(Object.values(workflowBounds).reduce((s, n) => s + n, 0));
    // readiness: at most one PostgreSQL select 1 and one GetSystemInfo per second per instance, whatever the probe rate
    const seconds = Math.ceil((endedAt - startedAt) / 1000);
    for (const [k, i] of instances.entries()) {
      expect(i.pg.count(/^select 1$/) - readinessBefore[k]!.select1, `instance ${k} select 1`).toBeLessThanOrEqual(seconds + 1);
      expect(i.temporal.count('GetSystemInfo') - readinessBefore[k]!.systemInfo, `instance ${k} GetSystemInfo`).toBeLessThanOrEqual(seconds + 1);
    }

    // ---------------------------------------------------------------- EVM
    const evmAfter = await evm();
    expect(evmAfter.nonce - evmBefore.nonce).toBeLessThanOrEqual(LIMITS.TRUST_ATTEST_DAILY_PER_DID * days);
    expect(Number(evmAfter.block - evmBefore.block)).toBe(evmAfter.nonce - evmBefore.nonce);

    // ---------------------------------------------------------------- PostgreSQL rows
    const rowsAfter = await rows();
    expect(rowsAfter.challenges - rowsBefore.challenges).toBeLessThanOrEqual(LIMITS.TRUST_CHALLENGES_DAILY_PER_IP * groups.challenge!.length * days);
    expect(rowsAfter.plain_registrations - rowsBefore.plain_registrations).toBeLessThanOrEqual(LIMITS.REGISTER_DAILY_CAP_PER_IP * groups.register!.length);
    expect(rowsAfter.sponsored_registrations - rowsBefore.sponsored_registrations).toBeLessThanOrEqual(LIMITS.SPONSORED_DAILY_BUDGET * days);
    expect(rowsAfter.contact_messages - rowsBefore.contact_messages).toBeLessThanOrEqual(LIMITS.CONTACT_HOURLY_CAP_PER_IP * groups.contact!.length);
    expect(rowsAfter.auth_challenges - rowsBefore.auth_challenges).toBeLessThanOrEqual(LIMITS.RATE_LIMIT_MAX * groups.authChallenge!.length);

    // ---------------------------------------------------------------- ledger
    const txs = await transactionsOf(ps.stack.ledger.mirror, operator.accountId, startedAt);
    const paidByOperator = txs.filter((t) => t.transaction_id.startsWith(`${operator.accountId}-`));
    const kind = (t: (typeof txs)[number]) => (t.name === 'CONSENSUSSUBMITMESSAGE' ? `${t.name} ${Object.entries(topics).find(([, id]) => id === t.entity_id)?.[0] ?? t.entity_id}` : t.name);
    const byKind = new Map<string, number>();
    for (const t of paidByOperator) byKind.set(kind(t), (byKind.get(kind(t)) ?? 0) + 1);
    const marketMessages = await topicMessagesSince(ps.stack.ledger.mirror, topics.marketplace, startedAt);
    const verified = marketMessages.filter((m) => { const j = JSON.parse(m.toString('utf8')) as Json; return j.type === 'task.verified' && j.taskId === taskId; });
    const a2aBytes = (await topicMessagesSince(ps.stack.ledger.mirror, topics.a2a, startedAt)).reduce((s, m) => s + m.length, 0);
    const ledgerBounds: Record<string, number> = {
      // unfunded escrow posts: their schedules and task.posted; the verify: task.verified when its outcome changes
      SCHEDULECREATE: LIMITS.MARKET_UNFUNDED_TASKS_MAX,
      'CONSENSUSSUBMITMESSAGE marketplace': LIMITS.MARKET_UNFUNDED_TASKS_MAX + LIMITS.MARKET_VERIFY_RUNS_MAX,
      'CONSENSUSSUBMITMESSAGE directory': LIMITS.SPONSORED_DAILY_BUDGET * days,
      // every chunk carries at least one byte of the budget
      'CONSENSUSSUBMITMESSAGE a2a': LIMITS.A2A_OPERATOR_DAILY_BYTES * days,
    };
    for (const [k, n] of byKind) expect(n, `operator-paid ${k}`).toBeLessThanOrEqual(ledgerBounds[k] ?? 0);
    expect(verified.length).toBeLessThanOrEqual(1);
    expect(a2aBytes).toBeLessThanOrEqual(LIMITS.A2A_OPERATOR_DAILY_BYTES * days);
    // the operator's balance moved by exactly these transactions (their fees), nothing else; treasury and escrow did not move
    const ledgerAfter = await balances();
    expect(ledgerAfter.operator - ledgerBefore.operator).toBe(txs.reduce((s, t) => s + netOf(t, operator.accountId), 0n));
    for (const t of paidByOperator) expect(netOf(t, operator.accountId), `${kind(t)} ${t.transaction_id}`).toBe(-BigInt(t.charged_tx_fee));
    expect(ledgerAfter.treasury).toBe(ledgerBefore.treasury);
    expect(ledgerAfter.escrow).toBe(ledgerBefore.escrow);

    // the flood went past every bound (so each was reached, not merely respected)
    for (const name of ['challenge', 'scan', 'wildcard', 'register', 'contact', 'authChallenge', 'feedSearch', 'verifyOwnership', 'sponsored', 'a2a', 'post', 'attest']) {
      expect(answers[name]!.some((a) => a.status === 429), `${name} was refused at its bound`).toBe(true);
    }
    console.log(
      `[abuseFlood] ${Object.values(answers).reduce((s, l) => s + l.length, 0)} requests from ${new Set(Object.values(answers).flat().map((a) => a.call.address)).size} addresses in ${((endedAt - startedAt) / 1000).toFixed(1)} s; ` +
        `operator paid ${JSON.stringify(Object.fromEntries(byKind))} (${ledgerBefore.operator - ledgerAfter.operator} tinybars); workflows ${JSON.stringify(Object.fromEntries([...started].map(([t, ids]) => [t, ids.length])))}; ` +
        `EVM tx ${evmAfter.nonce - evmBefore.nonce}; DNS names ${queriedNow.length}; site requests wild ${wildSite.requests() - sitesBefore.wild}, hot ${hotSite.requests() - sitesBefore.hot}, attest ${attestSite.requests() - sitesBefore.attest}, own ${ownSite.requests() - sitesBefore.own}; verify Updates ${verifyUpdates()} (${updatesWhileHeld} while held)`,
    );
  });
});
