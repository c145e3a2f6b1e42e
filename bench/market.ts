/**
 * Benchmark of the task marketplace (never run by `npm test`):
 *   npx tsx bench/market.ts            (BENCH_TASKS=100 BENCH_ESCROW=1 BENCH_PROBES=20 BENCH_TARGETS=dev,cluster)
 *
 * BENCH_TASKS concurrent task lifecycles over HTTP, on each target in turn, in the same run:
 *   - dev: the whole stack in one process, as before: a localnet, the Temporal CLI's dev server
 *     (SQLite), PostgreSQL, a worker running the real taskLifecycle workflow and the API;
 *   - cluster: the production topology (issue 22): the Temporal server itself on PostgreSQL persistence
 *     and SQL visibility (scripts/lib/temporalCluster.ts), two worker processes and two API processes
 *     (the real entry points, default worker settings) behind the local entry point, one Redis, its own
 *     localnet. Steps that outlast the API's bounded wait answer 202 and are followed by polling, so a
 *     step's time is always the time until its effect shows.
 * Each lifecycle: post + fund (POST /market/tasks/signed), claim (claim-with-key), deliver
 * (deliver-with-key), complete (complete-with-key: escrow payout), between the localnet's agents
 * (passports bought over x402 first). BENCH_ESCROW=0 posts without escrow and completes with the
 * poster's key paying directly.
 *
 * Printed per target: lifecycles per minute; per step p50 / p99 end to end; the ledger writes each step
 * makes and the raw ledger round trip of such a write measured in the same run (an SDK transfer / topic
 * message executed to its receipt against that target's localnet, BENCH_PROBES each, before and after
 * the run); and the service's own time per step = end-to-end p50 minus (writes x raw round trip p50).
 * The ledger writes of a step run one after another, so that difference is what Temporal, PostgreSQL,
 * the mirror reads and the API add.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { AccountId, Hbar, TopicMessageSubmitTransaction, TransferTransaction, type Client as HederaClient } from '@hashgraph/sdk';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createSql } from '../db/client.js';
import { dropDatabase } from '../db/migrate.js';
import { freePort } from '../scripts/lib/ports.js';
import { startTemporalDevServer } from '../scripts/lib/temporalServer.js';
import { freeClusterPorts, prepareTemporalCluster, startTemporalServer } from '../scripts/lib/temporalCluster.js';
import { resolveRedis } from '../scripts/lib/redis.js';
import { buildApp } from '../api/app.js';
import type { AppContext } from '../api/context.js';
import { createActivities } from '../activities/index.js';
import { createLedgerServices } from '../ledger/services.js';
import type { LedgerDeployment } from '../ledger/deployment.js';
import { createPayingFetch } from '@agent-passport/core/x402/clientScheme';
import type { LocalnetConfig } from '../localnet/index.js';
import { signChallenge, type TestAgent } from '../test/support/signing.js';
import { testConfig } from '../test/support/app.js';
import { startLedgerStack } from '../test/support/ledgerStack.js';
import { startClusterApp } from '../test/cluster/stack.js';
import { throwawayDatabase } from './lib.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 100);
/** a few agents post every task here: the per-poster posting caps (docs/costs.md) would refuse most of them; lifted in both targets (the cluster's API processes get them in their environment) */
const UNCAPPED_POSTING = { MARKET_UNFUNDED_TASKS_MAX: '1000000', MARKET_POSTS_PER_DAY: '1000000' };
const ESCROW = process.env.BENCH_ESCROW !== '0';
const PROBES = Number(process.env.BENCH_PROBES ?? 20);
const TARGETS = (process.env.BENCH_TARGETS ?? 'dev,cluster').split(',').map((t) => t.trim()) as ('dev' | 'cluster')[];
const here = path.dirname(fileURLToPath(import.meta.url));
const log = (s: string) => process.stderr.write(`${s}\n`);
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Step = 'post+fund' | 'claim' | 'deliver' | 'complete';
const STEPS: Step[] = ['post+fund', 'claim', 'deliver', 'complete'];
/** ledger writes each step makes, one after another, by kind */
const WRITES: Record<Step, { transfer: number; topic: number }> = ESCROW
  ? { 'post+fund': { transfer: 2, topic: 1 }, claim: { transfer: 0, topic: 1 }, deliver: { transfer: 0, topic: 1 }, complete: { transfer: 1, topic: 1 } }
  : { 'post+fund': { transfer: 0, topic: 1 }, claim: { transfer: 0, topic: 1 }, deliver: { transfer: 0, topic: 1 }, complete: { transfer: 1, topic: 1 } };

/** One stack to measure: an HTTP base URL, its localnet's agents, and its ledger for the raw probes. */
interface Target {
  name: string;
  describe: string;
  base: string;
  agents: TestAgent[];
  node: LocalnetConfig['node'];
  ledgerClient: HederaClient;
  deployment: LedgerDeployment;
  stop(): Promise<void>;
}

async function devTarget(): Promise<Target> {
  const db = await throwawayDatabase('market');
  const sql = createSql(db.url, { max: 10 });
  const temporal = await startTemporalDevServer({ port: await freePort(), log: () => {} });
  const stack = await startLedgerStack('market-bench');
  const taskQueue = `market-bench-${process.pid}`;
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const clientConnection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection: clientConnection, namespace: 'default' });
  const config = testConfig({ ...stack.env, TEMPORAL_TASK_QUEUE: taskQueue, RATE_LIMIT_MAX: '1000000', ...UNCAPPED_POSTING });
  const { deployment } = stack.clients;
  const activities = createActivities({ config, sql, ledger: createLedgerServices(stack.clients, { sql }) });
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue,
    workflowsPath: path.join(here, '..', 'workflows', 'index.ts'),
    activities,
    maxConcurrentActivityTaskExecutions: 200,
    maxConcurrentWorkflowTaskExecutions: 100,
  });
  const running = worker.run();
  const ctx: AppContext = { config, sql, ledger: stack.ledger, temporal: async () => client };
  const app = await buildApp(ctx, { logger: false });
  app.market.settings.workflowWaitMs = 120_000; // no 202s: each request answers when its step is done
  await app.listen({ port: 0, host: '127.0.0.1' });
  return {
    name: 'dev',
    describe: 'one process: the API and one worker in-process, the Temporal CLI dev server (SQLite)',
    base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}`,
    agents: stack.localnet.config.accounts,
    node: stack.localnet.config.node,
    ledgerClient: stack.clients.client,
    deployment,
    async stop() {
      await app.close();
      worker.shutdown();
      await running.catch(() => undefined);
      await clientConnection.close();
      await nativeConnection.close();
      await temporal.stop();
      await stack.stop();
      await sql.end();
      await db.drop();
    },
  };
}

async function clusterTarget(): Promise<Target> {
  const db = await throwawayDatabase('cluster');
  const stamp = `${Date.now() % 1e8}_${process.pid}`;
  const databases = { main: `temporal_bench_${stamp}`, visibility: `temporal_vis_bench_${stamp}` };
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bench-cluster-'));
  const cluster = await prepareTemporalCluster({ dir, databaseUrl: db.url, databases, ports: await freeClusterPorts(), log });
  const server = await startTemporalServer(cluster, { log });
  const redis = await resolveRedis({ redisUrl: process.env.REDIS_URL, dataDir: path.join(dir, 'redis'), log });
  process.env.REDIS_URL = redis.url;
  const app = await startClusterApp({ prefix: 'bench', workers: 2, services: { temporalAddress: cluster.address, databaseUrl: db.url }, apiEnv: UNCAPPED_POSTING, log });
  return {
    name: 'cluster',
    describe: 'Temporal server v1.29.1 on PostgreSQL (persistence + SQL visibility), 2 worker and 2 API processes behind the entry point, Redis',
    base: app.entry.url,
    agents: app.ledger.localnet.config.accounts,
    node: app.ledger.localnet.config.node,
    ledgerClient: app.ledger.clients.client,
    deployment: app.ledger.deployment,
    async stop() {
      await app.stop();
      await server.stop();
      await redis.stop();
      for (const name of [databases.main, databases.visibility]) {
        const u = new URL(db.url);
        u.pathname = `/${name}`;
        await dropDatabase(u.toString()).catch(() => undefined);
      }
      await db.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

type Json = Record<string, any>;

async function measure(t: Target): Promise<string> {
  const { agents, base } = t;
  const http = async (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => {
    const r = await fetch(`${base}${p}`, { method, headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers }, body: body === undefined ? undefined : JSON.stringify(body) });
    const text = await r.text();
    return { status: r.status, body: (text ? JSON.parse(text) : {}) as Json };
  };
  const signIn = async (a: TestAgent) => {
    const r = await http('GET', `/auth/challenge?did=${encodeURIComponent(a.did)}`);
    const challenge = String(r.body.challenge);
    return { 'x-service-did': a.did, 'x-service-challenge': challenge, 'x-service-signature': signChallenge(a, challenge) };
  };
  /** the task once its status is one of `want` (after a 202, or a read a moment behind the answer) */
  const taskAt = async (taskId: string, want: string[]) => {
    for (;;) {
      const r = await http('GET', `/market/tasks/${taskId}`);
      if (r.status === 200 && want.includes(r.body.status) && (!ESCROW || want[0] !== 'posted' || r.body.escrowStatus === 'funded')) return r.body;
      await sleep(200);
    }
  };
  /** a step's POST; a 202 (the step outlasted the API's wait) is followed until the task shows the step */
  const stepPost = async (p: string, body: unknown, taskId: string | null, want: string[], headers: Record<string, string> = {}) => {
    const r = await http('POST', p, body, headers);
    if (r.status === 200) return r.body;
    if (r.status === 202) {
      const id = taskId ?? /^task:(.+)$/.exec(String(r.body.workflowId ?? ''))?.[1];
      if (id) return taskAt(id, want);
    }
    throw new Error(`${p}: ${r.status} ${JSON.stringify(r.body)}`);
  };

  log(`[${t.name}] buying passports for ${agents.length} agents`);
  for (const a of agents) {
    const pay = createPayingFetch({ accountId: a.accountId, privateKey: a.privateKey, keyType: a.keyType, node: t.node, maxAmountTinybars: 600n * 100_000_000n, networks: ['local'] });
    const r = await pay(`${base}/passport/request`, { method: 'POST', headers: { 'content-type': 'application/json', ...(await signIn(a)) }, body: JSON.stringify({ tier: 'gold' }) });
    if (r.status !== 200 && r.status !== 202) throw new Error(`passport for ${a.accountId}: ${r.status} ${await r.text()}`);
    for (;;) {
      const p = await http('GET', `/passport/address/${a.accountId}`);
      if ((p.body.passports as Json[] | undefined)?.some((x) => x.active)) break;
      await sleep(250);
    }
  }

  // raw ledger round trips (SDK execute + receipt), the floor of each ledger write
  const op = t.ledgerClient;
  async function probe(): Promise<{ transfer: number[]; topic: number[] }> {
    const out = { transfer: [] as number[], topic: [] as number[] };
    for (let i = 0; i < PROBES; i++) {
      let t0 = performance.now();
      await (await new TransferTransaction().addHbarTransfer(op.operatorAccountId!, new Hbar(-1)).addHbarTransfer(AccountId.fromString(t.deployment.escrow), new Hbar(1)).execute(op)).getReceipt(op);
      out.transfer.push(performance.now() - t0);
      t0 = performance.now();
      await (await new TopicMessageSubmitTransaction().setTopicId(t.deployment.topics.marketplace).setMessage(`{"v":1,"probe":${i}}`).execute(op)).getReceipt(op);
      out.topic.push(performance.now() - t0);
    }
    return out;
  }
  const probesBefore = await probe();

  const times: Record<Step, number[]> = { 'post+fund': [], claim: [], deliver: [], complete: [] };
  const timed = async <T>(step: Step, fn: () => Promise<T>) => {
    const t0 = performance.now();
    const out = await fn();
    times[step].push(performance.now() - t0);
    return out;
  };
  let failed = 0;
  async function lifecycle(i: number) {
    const poster = agents[i % agents.length]!;
    const claimer = agents[(i + 1) % agents.length]!;
    const task = await timed('post+fund', async () =>
      ESCROW
        ? stepPost('/market/tasks/signed', { posterDid: poster.did, posterPrivateKey: poster.privateKey, title: `bench ${i}`, priceHbar: 1 }, null, ['posted'])
        : stepPost('/market/tasks', { posterDid: poster.did, title: `bench ${i}`, priceHbar: 1, escrow: false }, null, ['posted'], await signIn(poster)),
    );
    const id = task.taskId as string;
    await timed('claim', () => stepPost(`/market/tasks/${id}/claim-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey }, id, ['claimed']));
    await timed('deliver', () => stepPost(`/market/tasks/${id}/deliver-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey, resultBody: `result ${i}` }, id, ['delivered']));
    const done = await timed('complete', () => stepPost(`/market/tasks/${id}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }, id, ['completed']));
    if (done.status !== 'completed') throw new Error(`task ${id} ended ${done.status}`);
  }
  log(`[${t.name}] running ${TASKS} concurrent lifecycles (${ESCROW ? 'escrow' : 'direct payment'})`);
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: TASKS }, (_, i) =>
      lifecycle(i).catch((err) => {
        failed++;
        log(`[${t.name}] lifecycle ${i}: ${(err as Error).message.slice(0, 200)}`);
      }),
    ),
  );
  const wallMs = performance.now() - t0;
  const probesAfter = await probe();
  const raw = { transfer: [...probesBefore.transfer, ...probesAfter.transfer], topic: [...probesBefore.topic, ...probesAfter.topic] };
  const rawP50 = { transfer: pct(raw.transfer, 50), topic: pct(raw.topic, 50) };

  const out: string[] = [];
  out.push(`\n${t.name}: ${t.describe}`);
  out.push(`completed ${TASKS - failed}/${TASKS} in ${fmt(wallMs / 1000, 1)} s: ${fmt(((TASKS - failed) / wallMs) * 60_000, 1)} lifecycles per minute`);
  out.push(`raw ledger round trip (SDK execute + receipt, ${raw.transfer.length} each): transfer p50 ${fmt(rawP50.transfer, 1)} ms p99 ${fmt(pct(raw.transfer, 99), 1)} ms; topic message p50 ${fmt(rawP50.topic, 1)} ms p99 ${fmt(pct(raw.topic, 99), 1)} ms\n`);
  const header = ['step', 'n', 'p50 ms', 'p99 ms', 'ledger writes', 'raw ledger ms', 'service p50 ms'];
  const rows = STEPS.map((s) => {
    const w = WRITES[s];
    const ledgerMs = w.transfer * rawP50.transfer + w.topic * rawP50.topic;
    const p50 = pct(times[s], 50);
    return [s, String(times[s].length), fmt(p50, 1), fmt(pct(times[s], 99), 1), `${w.transfer} transfer/schedule + ${w.topic} topic`, fmt(ledgerMs, 1), fmt(p50 - ledgerMs, 1)];
  });
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  out.push(line(header));
  out.push(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) out.push(line(r));
  return out.join('\n');
}

async function main() {
  Runtime.install({ logger: new DefaultLogger(process.env.BENCH_LOG === 'WARN' ? 'WARN' : 'ERROR') });
  console.log(`marketplace benchmark, node ${process.version}, ${os.cpus().length} cores, ${TASKS} concurrent lifecycles, ${ESCROW ? 'escrow' : 'direct payment'}; targets ${TARGETS.join(', ')}`);
  for (const name of TARGETS) {
    const target = name === 'cluster' ? await clusterTarget() : await devTarget();
    try {
      console.log(await measure(target));
    } finally {
      await target.stop();
    }
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
