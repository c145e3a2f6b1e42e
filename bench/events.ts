/**
 * Benchmark of events out (issue 28 item 7; never run by `npm test`):
 *   npx tsx bench/events.ts     (BENCH_SUBSCRIPTIONS=100 BENCH_EVENTS=20 BENCH_PACED=50 BENCH_PROBES=100
 *                                BENCH_WRITERS=4; or the same as flags: --subscriptions=20 --events=20 ...)
 *
 * One process, real services: the Temporal CLI's dev server, PostgreSQL (127.0.0.1:5432 or
 * DATABASE_URL's server, a throwaway database), one worker running the product's webhookDelivery
 * workflow and deliverWebhookEvents activity (activities/web/webhookDelivery.ts, default worker
 * concurrency) with the product's waker (worker/webhookWaker.ts), and one HTTP receiver verifying
 * every delivery with the `standardwebhooks` package.
 *
 * BENCH_SUBSCRIPTIONS subscriptions, one per agent DID, each to its own path on the receiver. Events
 * are written as the product writes them: appendEvents in a PostgreSQL transaction (an
 * a2a.message_received for one agent per transaction); an event's commit time is when its
 * transaction's commit returned, its arrival time when the receiver has read and verified it (the
 * same process, the same clock). Measured:
 *   - paced: BENCH_PACED events one at a time (the next written when the last arrived), to agents in
 *     turn: the delay of one event on an idle system;
 *   - burst: BENCH_EVENTS events per subscription written by BENCH_WRITERS concurrent writers as fast
 *     as they commit: events per second from the first commit to the last arrival, and the delay
 *     under that load;
 *   - backlog: as many events again written while the waker is stopped (no workflow is nudged), then
 *     a waker started: events per second from its start to the last arrival, what delivery itself can
 *     do whatever the writers' rate (the burst's rate is bounded by the slower of the two);
 *   - floor (a): one Standard-Webhooks-signed POST (the same fetcher, net/safeFetch) to the same
 *     receiver, BENCH_PROBES one after another; and the receiver's capacity: as many signed POSTs
 *     as there are subscriptions in flight at once (at most 64);
 *   - floor (b): an empty workflow (bench/eventsWorkflows.ts: start, one activity, done) on the
 *     same Temporal server and worker, BENCH_PROBES one after another: start -> activity running,
 *     and start -> result.
 */
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import { Webhook } from 'standardwebhooks';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Runtime, DefaultLogger, Worker } from '@temporalio/worker';
import { createSql } from '../db/client.js';
import { appendEvents } from '../db/queries/events.js';
import { createWebhook } from '../db/queries/webhooks.js';
import { sealWebhookSecret } from '../db/webhookSecrets.js';
import { webhookSecretOf } from '../domain/events.js';
import { safeFetch } from '../net/safeFetch.js';
import { createWebhookDeliveryActivities } from '../activities/web/webhookDelivery.js';
import { startWebhookWaker } from '../worker/webhookWaker.js';
import { freePort } from '../scripts/lib/ports.js';
import { startTemporalDevServer } from '../scripts/lib/temporalServer.js';
import { fmt, log, percentile, table, throwawayDatabase } from './lib.js';
import type { benchEmptyWorkflow } from './eventsWorkflows.js';

const flags: Record<string, string> = Object.fromEntries(
  process.argv.slice(2).flatMap((a) => {
    const m = /^--([a-z]+)=(.+)$/.exec(a);
    return m ? [[m[1]!, m[2]!]] : [];
  }),
);
const knob = (flag: string, env: string, dflt: number) => Number(flags[flag] ?? process.env[env] ?? dflt);
const SUBS = knob('subscriptions', 'BENCH_SUBSCRIPTIONS', 100);
const EVENTS = knob('events', 'BENCH_EVENTS', 20);
const PACED = knob('paced', 'BENCH_PACED', 50);
const PROBES = knob('probes', 'BENCH_PROBES', 100);
const WRITERS = knob('writers', 'BENCH_WRITERS', 4);
const TARGET_RATIO = 3;
const here = path.dirname(fileURLToPath(import.meta.url));

/** The receiver: one path per subscription, each delivery verified with its secret; first arrival per event id kept. */
async function startReceiver() {
  const secrets = new Map<string, Webhook>(); // path -> verifier
  const arrivedAt = new Map<string, number>();
  const waiters = new Map<string, () => void>();
  let bad = 0;
  let duplicates = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const wh = secrets.get(req.url ?? '');
      try {
        if (!wh) throw new Error('unknown path');
        const ev = wh.verify(Buffer.concat(chunks).toString('utf8'), req.headers as Record<string, string>) as { id: string };
        if (req.url !== '/floor') {
          if (arrivedAt.has(ev.id)) duplicates++;
          else arrivedAt.set(ev.id, performance.now());
          waiters.get(ev.id)?.();
        }
        res.writeHead(204).end();
      } catch {
        bad++;
        res.writeHead(400).end();
      }
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    base,
    secrets,
    arrivedAt,
    stats: () => ({ bad, duplicates }),
    /** resolves when `id` has arrived */
    arrival: (id: string) => (arrivedAt.has(id) ? Promise.resolve() : new Promise<void>((r) => waiters.set(id, r))),
    close: () => new Promise<void>((r) => server.close(() => r())),
  };
}
type Receiver = Awaited<ReturnType<typeof startReceiver>>;

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { p50: percentile(s, 50), p99: percentile(s, 99), n: s.length };
};

/** floor (a): signed POSTs to the receiver's /floor, one after another; then the receiver's capacity with `inFlight` at once */
async function postFloor(rx: Receiver) {
  const secret = webhookSecretOf(crypto.getRandomValues(new Uint8Array(32)));
  const wh = new Webhook(secret);
  rx.secrets.set('/floor', wh);
  const post = async () => {
    const id = randomUUID();
    const body = JSON.stringify({ id, type: 'a2a.message_received', timestamp: new Date().toISOString(), subject: id, data: { fromDid: 'did:bench:sender' } });
    const at = new Date();
    const headers = { 'webhook-id': id, 'webhook-timestamp': String(Math.floor(at.getTime() / 1000)), 'webhook-signature': wh.sign(id, at, body) };
    const res = await safeFetch(`${rx.base}/floor`, { post: { body, headers }, maxRedirects: 0, timeoutMs: 10_000, maxBytes: 16 * 1024, allowPrivate: true, accept: '*/*' });
    if (res.status !== 204) throw new Error(`floor POST answered ${res.status}`);
  };
  for (let i = 0; i < 20; i++) await post(); // warm-up
  const times: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    const t = performance.now();
    await post();
    times.push(performance.now() - t);
  }
  const inFlight = Math.min(64, Math.max(1, SUBS));
  const total = Math.max(500, inFlight * 10);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < total) await post();
    }),
  );
  const capacity = total / ((performance.now() - t0) / 1000);
  return { ...stats(times), capacity, inFlight };
}

/** floor (b): the empty workflow, one after another: start -> activity running, start -> result */
async function temporalFloor(client: Client, taskQueue: string) {
  const once = async () => {
    const t = performance.now();
    const handle = await client.workflow.start<typeof benchEmptyWorkflow>('benchEmptyWorkflow', { taskQueue, workflowId: `bench-empty-${randomUUID()}` });
    const ranAt = await handle.result();
    return { toActivity: ranAt - t, toResult: performance.now() - t };
  };
  for (let i = 0; i < 10; i++) await once(); // warm-up
  const toActivity: number[] = [];
  const toResult: number[] = [];
  for (let i = 0; i < PROBES; i++) {
    const r = await once();
    toActivity.push(r.toActivity);
    toResult.push(r.toResult);
  }
  return { toActivity: stats(toActivity), toResult: stats(toResult) };
}

async function main() {
  log(`events bench: ${SUBS} subscriptions x ${EVENTS} events (burst, ${WRITERS} writers), ${PACED} paced, ${PROBES} floor probes`);
  Runtime.install({ logger: new DefaultLogger('WARN') });
  const db = await throwawayDatabase('events');
  const sql = createSql(db.url, { max: 10 });
  const temporal = await startTemporalDevServer({ port: await freePort(), log: () => {} });
  const taskQueue = `events-bench-${process.pid}`;
  const nativeConnection = await NativeConnection.connect({ address: temporal.address });
  const clientConnection = await Connection.connect({ address: temporal.address });
  const client = new Client({ connection: clientConnection, namespace: 'default' });
  const rx = await startReceiver();
  const worker = await Worker.create({
    connection: nativeConnection,
    namespace: 'default',
    taskQueue,
    workflowsPath: path.join(here, 'eventsWorkflows.ts'),
    activities: {
      ...createWebhookDeliveryActivities({ sql, codecKey: undefined, retryHours: 72, development: false, allowPrivate: true }),
      benchFloorActivity: async () => performance.now(),
    },
  });
  const running = worker.run();
  const startWaker = () => startWebhookWaker({ sql, client: async () => client, taskQueue, log: (m, err) => log(`${m}${err ? `: ${String(err)}` : ''}`) });
  let waker = await startWaker();
  try {
    // subscriptions: the waker's cache sees them (NOTIFY webhook_changed) and starts their workflows
    const owners: string[] = [];
    for (let i = 0; i < SUBS; i++) {
      const owner = `did:bench:agent-${i}`;
      const secret = webhookSecretOf(crypto.getRandomValues(new Uint8Array(32)));
      const row = await createWebhook(sql, { id: randomUUID(), ownerDid: owner, url: `${rx.base}/hook/${i}`, events: ['a2a.message_received'], capabilities: [], secretSealed: sealWebhookSecret(secret, undefined) }, SUBS + 1);
      if (row === 'limit') throw new Error('subscription limit');
      rx.secrets.set(`/hook/${i}`, new Webhook(secret));
      owners.push(owner);
    }
    const commitAt = new Map<string, number>();
    const write = async (owner: string) => {
      const [id] = await sql.begin((tx) => appendEvents(tx, [{ type: 'a2a.message_received', subject: randomUUID(), audience: [owner], data: { fromDid: 'did:bench:sender', messageId: randomUUID() }, key: randomUUID() }]));
      commitAt.set(id!, performance.now());
      return id!;
    };
    const delays = (ids: string[]) => stats(ids.map((id) => rx.arrivedAt.get(id)! - commitAt.get(id)!));

    // warm-up: one event per subscription, until every workflow has delivered once
    log('warm-up: one event per subscription');
    await Promise.all((await Promise.all(owners.map(write))).map((id) => rx.arrival(id)));

    log(`paced: ${PACED} events one at a time`);
    const pacedIds: string[] = [];
    for (let i = 0; i < PACED; i++) {
      const id = await write(owners[i % SUBS]!);
      await rx.arrival(id);
      pacedIds.push(id);
    }
    const paced = delays(pacedIds);

    log(`burst: ${SUBS * EVENTS} events by ${WRITERS} writers`);
    const order = Array.from({ length: SUBS * EVENTS }, (_, n) => owners[n % SUBS]!);
    const burstIds: string[] = [];
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < order.length) burstIds.push(await write(order[next++]!));
      }),
    );
    const writtenAt = performance.now();
    await Promise.all(burstIds.map((id) => rx.arrival(id)));
    const firstCommit = Math.min(...burstIds.map((id) => commitAt.get(id)!));
    const lastArrival = Math.max(...burstIds.map((id) => rx.arrivedAt.get(id)!));
    const burst = delays(burstIds);
    const perSecond = burstIds.length / ((lastArrival - firstCommit) / 1000);
    const writesPerSecond = burstIds.length / ((writtenAt - t0) / 1000);

    // backlog: the same number of events written with no waker (no workflow is nudged, none
    // delivers), then a waker started: every workflow drains its backlog at once. Events per second
    // from the waker's start to the last arrival is what delivery can do, whatever the writers do.
    log(`backlog: ${SUBS * EVENTS} events written with the waker stopped, then drained`);
    await waker.close();
    const backlogIds: string[] = [];
    next = 0;
    await Promise.all(
      Array.from({ length: WRITERS }, async () => {
        while (next < order.length) backlogIds.push(await write(order[next++]!));
      }),
    );
    const drainFrom = performance.now();
    waker = await startWaker();
    await Promise.all(backlogIds.map((id) => rx.arrival(id)));
    const drainPerSecond = backlogIds.length / ((Math.max(...backlogIds.map((id) => rx.arrivedAt.get(id)!)) - drainFrom) / 1000);

    log('floor (a): signed POSTs');
    const post = await postFloor(rx);
    log('floor (b): empty workflow');
    const wf = await temporalFloor(client, taskQueue);
    const { bad, duplicates } = rx.stats();

    const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
    console.log(`\nEvents out (issue 28): ${SUBS} subscriptions, ${EVENTS} events each in the burst (${WRITERS} writers), ${PACED} paced events, ${PROBES} floor probes; ${os.cpus().length} cores, load ${load}`);
    table(
      'Delay: receiver arrival - commit of the event’s transaction (ms)',
      ['measure', 'n', 'p50', 'p99'],
      [
        ['paced (one event in flight)', String(paced.n), fmt(paced.p50, 1), fmt(paced.p99, 1)],
        [`burst (${SUBS} x ${EVENTS})`, String(burst.n), fmt(burst.p50, 1), fmt(burst.p99, 1)],
        ['floor (a): one signed POST to the receiver', String(post.n), fmt(post.p50, 1), fmt(post.p99, 1)],
        ['floor (b): empty workflow, start -> activity running', String(wf.toActivity.n), fmt(wf.toActivity.p50, 1), fmt(wf.toActivity.p99, 1)],
        ['floor (b): empty workflow, start -> result', String(wf.toResult.n), fmt(wf.toResult.p50, 1), fmt(wf.toResult.p99, 1)],
      ],
    );
    const ratio = paced.p50 / wf.toActivity.p50;
    const ratioResult = paced.p50 / wf.toResult.p50;
    const bounded = drainPerSecond >= 0.8 * post.capacity;
    const keepsUp = perSecond >= 0.9 * writesPerSecond;
    table(
      'Throughput and ratios',
      ['measure', 'value'],
      [
        ['burst: events/s, first commit -> last arrival', fmt(perSecond, 0)],
        ['burst: events/s committed by the writers', fmt(writesPerSecond, 0)],
        [`receiver capacity: signed POSTs/s, ${post.inFlight} in flight`, fmt(post.capacity, 0)],
        ['burst: delivery keeps up with the writers (>= 90% of their rate)', keepsUp ? 'yes' : 'no'],
        [`backlog: events/s drained, waker start -> last arrival`, fmt(drainPerSecond, 0)],
        ['backlog drain bounded by the receiver (>= 80% of its capacity)', bounded ? 'yes' : 'no'],
        [`paced delay p50 / floor (b) start -> activity p50 (target <= ${TARGET_RATIO})`, `${fmt(ratio, 2)}x ${ratio <= TARGET_RATIO ? '(met)' : '(missed)'}`],
        ['paced delay p50 / floor (b) start -> result p50', `${fmt(ratioResult, 2)}x`],
        ['deliveries failing verification / repeated', `${bad} / ${duplicates}`],
      ],
    );
  } finally {
    await waker.close();
    worker.shutdown();
    await running.catch(() => undefined);
    await clientConnection.close();
    await nativeConnection.close();
    await temporal.stop();
    await rx.close();
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
