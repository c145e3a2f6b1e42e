/**
 * Benchmark of the task marketplace (never run by `npm test`):
 *   npx tsx bench/market.ts            (BENCH_TASKS=100 BENCH_ESCROW=1 BENCH_PROBES=20)
 *
 * BENCH_TASKS concurrent task lifecycles over HTTP against the whole stack in one process: a localnet,
 * a Temporal dev server (the CLI, or the SDK's download), PostgreSQL, a worker running the real
 * taskLifecycle workflow and the API. Each lifecycle: post + fund (POST /market/tasks/signed), claim
 * (claim-with-key), deliver (deliver-with-key), complete (complete-with-key: escrow payout), between
 * the localnet's agents (passports bought over x402 first). BENCH_ESCROW=0 posts without escrow and
 * completes with the poster's key paying directly.
 *
 * Printed: tasks per minute; per step p50 / p99 end to end; the ledger writes each step makes and
 * the raw ledger round trip of such a write measured in the same run (an SDK transfer / topic
 * message executed to its receipt against the same localnet, BENCH_PROBES each, under the same load
 * pattern: before and after the run); and the service's own time per step = end-to-end p50 minus
 * (writes x raw round trip p50). The ledger writes of a step run one after another, so that
 * difference is what Temporal, PostgreSQL, the mirror reads and the API add.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { AccountId, Hbar, TopicMessageSubmitTransaction, TransferTransaction } from '@hashgraph/sdk';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { createSql } from '../db/client.js';
import { freePort } from '../scripts/lib/ports.js';
import { startTemporalDevServer } from '../scripts/lib/temporalServer.js';
import { buildApp } from '../api/app.js';
import type { AppContext } from '../api/context.js';
import { marketState } from '../api/routes/market/shared.js';
import { createActivities } from '../activities/index.js';
import { IdempotentSubmitter } from '../ledger/submit.js';
import { createPayingFetch } from '../ledger/x402/clientScheme.js';
import { signedHeaders } from '../test/support/signing.js';
import { testConfig } from '../test/support/app.js';
import { startLedgerStack } from '../test/support/ledgerStack.js';
import { throwawayDatabase } from './lib.js';

const TASKS = Number(process.env.BENCH_TASKS ?? 100);
const ESCROW = process.env.BENCH_ESCROW !== '0';
const PROBES = Number(process.env.BENCH_PROBES ?? 20);
const here = path.dirname(fileURLToPath(import.meta.url));
const log = (s: string) => process.stderr.write(`${s}\n`);
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
};

type Step = 'post+fund' | 'claim' | 'deliver' | 'complete';
const STEPS: Step[] = ['post+fund', 'claim', 'deliver', 'complete'];
/** ledger writes each step makes, one after another, by kind */
const WRITES: Record<Step, { transfer: number; topic: number }> = ESCROW
  ? { 'post+fund': { transfer: 2, topic: 1 }, claim: { transfer: 0, topic: 1 }, deliver: { transfer: 0, topic: 1 }, complete: { transfer: 1, topic: 1 } }
  : { 'post+fund': { transfer: 0, topic: 1 }, claim: { transfer: 0, topic: 1 }, deliver: { transfer: 0, topic: 1 }, complete: { transfer: 1, topic: 1 } };

async function main() {
  Runtime.install({ logger: new DefaultLogger(process.env.BENCH_LOG === 'WARN' ? 'WARN' : 'ERROR') });
  const db = await throwawayDatabase('market');
  const url = db.url;
  const sql = createSql(url, { max: 10 });
  const temporalPort = await freePort();
  const temporal = await startTemporalDevServer({ port: temporalPort, log: () => {} });
  const stack = await startLedgerStack('market-bench');
  const taskQueue = `market-bench-${process.pid}`;
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const clientConnection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection: clientConnection, namespace: 'default' });
  const env = { ...stack.env, TEMPORAL_TASK_QUEUE: taskQueue, RATE_LIMIT_MAX: '1000000' };
  const config = testConfig(env);
  const { deployment, mirror } = stack.ledger;
  const activities = createActivities({ config, sql, ledger: { deployment, client: stack.ledger.client, mirror, submitter: new IdempotentSubmitter({ sql, client: stack.ledger.client, mirror }) } });
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
  marketState(ctx).workflowWaitMs = 120_000; // no 202s: each request answers when its step is done
  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  try {
    const agents = stack.localnet.config.accounts;
    log(`buying passports for ${agents.length} agents`);
    for (const a of agents) {
      const headers = await signedHeaders(app, a);
      const pay = createPayingFetch({ accountId: a.accountId, privateKey: a.privateKey, keyType: a.keyType, node: stack.localnet.config.node, maxAmountTinybars: 600n * 100_000_000n, networks: ['local'] });
      const r = await pay(`${base}/passport/request`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify({ tier: 'bronze' }) });
      if (r.status !== 200) throw new Error(`passport for ${a.accountId}: ${r.status} ${await r.text()}`);
    }

    // raw ledger round trips (SDK execute + receipt), the floor of each ledger write
    const op = stack.ledger.client;
    async function probe(): Promise<{ transfer: number[]; topic: number[] }> {
      const out = { transfer: [] as number[], topic: [] as number[] };
      for (let i = 0; i < PROBES; i++) {
        let t0 = performance.now();
        await (await new TransferTransaction().addHbarTransfer(op.operatorAccountId!, new Hbar(-1)).addHbarTransfer(AccountId.fromString(deployment.escrow), new Hbar(1)).execute(op)).getReceipt(op);
        out.transfer.push(performance.now() - t0);
        t0 = performance.now();
        await (await new TopicMessageSubmitTransaction().setTopicId(deployment.topics.marketplace).setMessage(`{"v":1,"probe":${i}}`).execute(op)).getReceipt(op);
        out.topic.push(performance.now() - t0);
      }
      return out;
    }
    const probesBefore = await probe();

    const post = async (p: string, body: unknown) => {
      const r = await fetch(`${base}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const json = (await r.json()) as Record<string, any>;
      if (r.status !== 200) throw new Error(`${p}: ${r.status} ${JSON.stringify(json)}`);
      return json;
    };
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
      const task = await timed('post+fund', () =>
        ESCROW
          ? post('/market/tasks/signed', { posterDid: poster.did, posterPrivateKey: poster.privateKey, title: `bench ${i}`, priceHbar: 1 })
          : signedHeaders(app, poster).then((h) =>
              fetch(`${base}/market/tasks`, { method: 'POST', headers: { 'content-type': 'application/json', ...h }, body: JSON.stringify({ posterDid: poster.did, title: `bench ${i}`, priceHbar: 1, escrow: false }) }).then(
                (r) => r.json() as Promise<Record<string, any>>,
              ),
            ),
      );
      const id = task.taskId as string;
      await timed('claim', () => post(`/market/tasks/${id}/claim-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey }));
      await timed('deliver', () => post(`/market/tasks/${id}/deliver-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey, resultBody: `result ${i}` }));
      const done = await timed('complete', () => post(`/market/tasks/${id}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }));
      if (done.status !== 'completed') throw new Error(`task ${id} ended ${done.status}`);
    }
    log(`running ${TASKS} concurrent lifecycles (${ESCROW ? 'escrow' : 'direct payment'})`);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: TASKS }, (_, i) =>
        lifecycle(i).catch((err) => {
          failed++;
          log(`lifecycle ${i}: ${(err as Error).message.slice(0, 200)}`);
        }),
      ),
    );
    const wallMs = performance.now() - t0;
    const probesAfter = await probe();
    const raw = { transfer: [...probesBefore.transfer, ...probesAfter.transfer], topic: [...probesBefore.topic, ...probesAfter.topic] };
    const rawP50 = { transfer: pct(raw.transfer, 50), topic: pct(raw.topic, 50) };

    console.log(`\nmarketplace benchmark, node ${process.version}, ${TASKS} concurrent lifecycles, ${ESCROW ? 'escrow' : 'direct payment'}, ${agents.length} agents`);
    console.log(`completed ${TASKS - failed}/${TASKS} in ${fmt(wallMs / 1000, 1)} s: ${fmt(((TASKS - failed) / wallMs) * 60_000, 1)} tasks per minute`);
    console.log(`raw ledger round trip (SDK execute + receipt, ${raw.transfer.length} each): transfer p50 ${fmt(rawP50.transfer, 1)} ms p99 ${fmt(pct(raw.transfer, 99), 1)} ms; topic message p50 ${fmt(rawP50.topic, 1)} ms p99 ${fmt(pct(raw.topic, 99), 1)} ms\n`);
    const header = ['step', 'n', 'p50 ms', 'p99 ms', 'ledger writes', 'raw ledger ms', 'service p50 ms'];
    const rows = STEPS.map((s) => {
      const w = WRITES[s];
      const ledgerMs = w.transfer * rawP50.transfer + w.topic * rawP50.topic;
      const p50 = pct(times[s], 50);
      return [s, String(times[s].length), fmt(p50, 1), fmt(pct(times[s], 99), 1), `${w.transfer} transfer/schedule + ${w.topic} topic`, fmt(ledgerMs, 1), fmt(p50 - ledgerMs, 1)];
    });
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
    const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
    console.log(line(header));
    console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
    for (const r of rows) console.log(line(r));
  } finally {
    await app.close();
    worker.shutdown();
    await running.catch(() => undefined);
    await clientConnection.close();
    await nativeConnection.close();
    await temporal.stop();
    await stack.stop();
    await sql.end();
    await db.drop();
  }
}

main().then(
  () => process.exit(0),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
