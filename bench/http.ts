/**
 * Hot reads over HTTP: the real app next to a bare Fastify route answering the same JSON, route by
 * route, in the same run (issue 8, "The fast path"). Never run by `npm test`:
 *   npx tsx bench/http.ts      (BENCH_ROUNDS=5 BENCH_SECONDS=2 BENCH_CONNECTIONS=10)
 *
 * Three processes so neither server shares an event loop with the load generator:
 *   - this one: PostgreSQL (DATABASE_URL, else 127.0.0.1:5432, else embedded; a throwaway database),
 *     a localnet (its mirror supplies the account keys of the DID documents), the data (passports
 *     and chain events written through the same queries as the product, so their NOTIFYs fire),
 *     and autocannon;
 *   - `serve-app`: the real app built by buildApp, as api/server.ts builds it (every plugin on:
 *     request id, security headers, CORS, rate limit raised to 10^9, logger at info into /dev/null:
 *     successes write no access line at info, BENCH_LOG_LEVEL=debug writes one per answer);
 *   - `serve-bare`: bare Fastify, one route per path answering the very JSON the app answered
 *     (parsed once, serialised by Fastify's default JSON path), no plugins;
 *   - and the real app twice more with operators' telemetry on (issue 30), started as api/server.ts
 *     starts it (telemetry/process.ts): `+metrics` serves METRICS_PORT (RED per route, tracing off: no
 *     OTLP endpoint), `+metrics+traces` also exports every request's spans over OTLP (http/protobuf,
 *     the default) to a local receiver in this process that answers 200 and keeps nothing, and
 *     `+metrics +traces 5%` the same with one request in twenty sampled (parentbased_traceidratio 0.05)
 *     (BENCH_TELEMETRY=0 measures the app and bare only).
 * Before measuring it checks that all answer byte-identical bodies. Then for each route: the servers
 * in alternating rounds (BENCH_ROUNDS=5 of BENCH_SECONDS=2 each), same connections; prints
 * req/s (mean of rounds), p99 latency (median of rounds) and the app/bare ratio (median of the
 * rounds' ratios) per route, and the CPU time each server process spent per request (its
 * process.cpuUsage() around each round, asked over IPC): on a machine shared with other work the
 * CPU ratio is the steadier of the two, since waiting for a core does not count.
 *
 * Reads at scale (issue 31): BENCH_SIZES=agents/open/closed,... (default 200/200/2000) seeds the
 * database with `npm run seed`'s dataset (scripts/lib/seed.ts) at each size in turn and starts a fresh
 * app process on it: the time until it listens, until every in-memory read answers (the caches' load
 * from PostgreSQL), and its memory after a full GC (RSS, heap) go in a second table. The routes are
 * then measured at the last size, e.g. BENCH_SIZES=1000/1000/10000,5000/5000/50000,10000/10000/100000.
 *
 * BENCH_ROUTES=/did,/health measures a subset; BENCH_PROFILE=dir writes
 * a CPU profile of the app process; BENCH_LOG_LEVEL overrides the app's log level (default info).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import autocannon from 'autocannon';
import Fastify from 'fastify';
import pino from 'pino';
import { SEED_TOKEN_ID, seedDatabase, seedDid, type SeedSize } from '../scripts/lib/seed.js';
import { fmt } from './lib.js';

const SECONDS = Number(process.env.BENCH_SECONDS ?? 2);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 10);
const CHAIN_ID = 31337;
const self = fileURLToPath(import.meta.url);

/** Environment of the app process: the same config loader as production, limits raised. */
function appEnv(extra: Record<string, string>): Record<string, string> {
  // one public origin for every app process (as production sets it), so their links and bodies are the same bytes
  return { LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'info', RATE_LIMIT_MAX: '1000000000', EVM_CHAIN_ID: String(CHAIN_ID), NODE_ENV: 'development', PUBLIC_BASE_URL: 'http://127.0.0.1:3000', ...extra };
}

// ------------------------------------------------------------------ child: the real app

async function serveApp() {
  const { loadConfig } = await import('../config/index.js');
  // telemetry first, as api/server.ts starts it (nothing without METRICS_PORT / an OTLP endpoint)
  const { startProcessTelemetry } = await import('../telemetry/process.js');
  await startProcessTelemetry(loadConfig(process.env), 'api');
  const { createSql } = await import('../db/client.js');
  const { apiLedgerContext } = await import('../api/context.js');
  const { buildApp } = await import('../api/app.js');
  const config = loadConfig(process.env);
  const sql = createSql(config.DATABASE_URL!);
  const ledger = apiLedgerContext(config);
  const app = await buildApp(
    { config, sql, ledger },
    // the destination pino uses for stdout in production (sonic-boom), pointed at /dev/null
    { logger: { stream: pino.destination('/dev/null') } },
  );
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.once('SIGTERM', () => process.exit(0)); // exit (not killed) so a --cpu-prof profile is written
  answerCpuProbe();
  process.stdout.write(`LISTENING ${(app.server.address() as { port: number }).port}\n`);
}

// ------------------------------------------------------------------ child: bare Fastify

async function serveBare() {
  const routes = JSON.parse(readFileSync(process.env.BENCH_BODIES!, 'utf8')) as Array<{ path: string; body: string }>;
  const app = Fastify({ logger: false });
  // one route per path; paths measured with several query strings (/market/tasks) answer by the whole URL
  const byUrl = new Map<string, unknown>();
  for (const r of routes) {
    const json = JSON.parse(r.body) as unknown;
    const path = r.path.split('?')[0]!;
    if (!byUrl.has(path)) app.get(path, async (request) => byUrl.get(request.url));
    byUrl.set(path, json);
    byUrl.set(r.path, json);
  }
  await app.listen({ host: '127.0.0.1', port: 0 });
  answerCpuProbe();
  process.stdout.write(`LISTENING ${(app.server.address() as { port: number }).port}\n`);
}

// ------------------------------------------------------------------ main

/** Server side of the CPU-time probe: answers 'cpu' with the process's CPU time so far (µs). */
function answerCpuProbe() {
  process.on('message', (m) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send?.(u.user + u.system);
    }
    if (m === 'mem') {
      // after a full collection (the app runs with --expose-gc): what the process keeps, not its garbage
      (globalThis as { gc?: () => void }).gc?.();
      const { rss, heapUsed, heapTotal, external } = process.memoryUsage();
      process.send?.({ rss, heapUsed, heapTotal, external });
    }
  });
}

interface Memory {
  rss: number;
  heapUsed: number;
  heapTotal: number;
  external: number;
}

/** A server process's memory after a full GC. */
function memOf(child: ChildProcess): Promise<Memory> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(m as Memory));
    child.send('mem');
  });
}

/** The CPU time (µs) a server process has used so far. */
function cpuOf(child: ChildProcess): Promise<number> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(Number(m)));
    child.send('cpu');
  });
}

function startChild(mode: string, env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  // BENCH_PROFILE=dir: the app process writes a V8 CPU profile there (open it in Chrome DevTools)
  const profile = mode === 'serve-app' && process.env.BENCH_PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROFILE}`] : [];
  const gc = mode === 'serve-app' ? ['--expose-gc'] : [];
  const child = spawn(process.execPath, [...profile, ...gc, '--import', 'tsx', self, mode], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /LISTENING (\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`${mode} exited with ${code}`)));
  });
}

interface Server {
  base: string;
  child: ChildProcess;
}

async function run(server: Server, urlPath: string, seconds: number) {
  const cpu0 = await cpuOf(server.child);
  const r = await autocannon({ url: `${server.base}${urlPath}`, connections: CONNECTIONS, duration: seconds });
  const cpu1 = await cpuOf(server.child);
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${urlPath}: ${r.non2xx} non-2xx answers, ${r.errors} errors`);
  return { rps: r.requests.average, p99: r.latency.p99, cpuPerRequest: (cpu1 - cpu0) / r.requests.total };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

/**
 * The servers in alternating rounds (app, bare, ..., app, bare, ...), so a change in the machine's
 * background load hits them alike; each one's ratio to bare (the last server) is the median of the
 * rounds' ratios.
 */
async function compare(servers: Server[], urlPath: string) {
  for (const server of servers) await run(server, urlPath, 1); // warm-up
  type Round = Awaited<ReturnType<typeof run>>;
  const rounds: Round[][] = servers.map(() => []);
  for (let i = 0; i < ROUNDS; i++) for (const [k, server] of servers.entries()) rounds[k]!.push(await run(server, urlPath, SECONDS));
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const bare = rounds[rounds.length - 1]!;
  return rounds.map((rs) => ({
    rps: mean(rs.map((r) => r.rps)),
    p99: median(rs.map((r) => r.p99)),
    cpu: median(rs.map((r) => r.cpuPerRequest)),
    ratio: median(rs.map((r, i) => r.rps / bare[i]!.rps)),
    cpuRatio: median(rs.map((r, i) => bare[i]!.cpuPerRequest / r.cpuPerRequest)),
  }));
}

/** Parses BENCH_SIZES: `agents/open/closed` triples separated by commas. */
function parseSizes(text: string): SeedSize[] {
  return text
    .split(',')
    .filter((t) => t.trim() !== '')
    .map((t) => {
      const [agents, openTasks, closedTasks] = t.split('/').map(Number);
      if (![agents, openTasks, closedTasks].every((n) => Number.isSafeInteger(n) && n! >= 0)) throw new Error(`BENCH_SIZES: ${t} is not agents/open/closed`);
      return { agents: agents!, openTasks: openTasks!, closedTasks: closedTasks! };
    });
}
const SIZES = parseSizes(process.env.BENCH_SIZES ?? '200/200/2000');

/**
 * A fresh app process on the database as seeded: how long until it listens, how long until every
 * in-memory read answers 200 (the caches' first full load from PostgreSQL), and its memory then.
 */
async function footprint(size: SeedSize, env: Record<string, string>): Promise<string> {
  const started = performance.now();
  const proc = await startChild('serve-app', env);
  const listening = performance.now() - started;
  try {
    const base = `http://127.0.0.1:${proc.port}`;
    for (const p of ['/market/tasks?limit=1', '/agents?limit=1', '/api/search?q=oracle', `/agents/${encodeURIComponent(seedDid(0))}`, `/passports?limit=1&tokenId=${SEED_TOKEN_ID}`]) {
      for (;;) {
        const res = await fetch(`${base}${p}`);
        await res.arrayBuffer();
        if (res.status === 200) break;
        if (res.status !== 503) throw new Error(`${p}: ${res.status}`);
      }
    }
    const loaded = performance.now() - started;
    const m = await memOf(proc.child);
    const mb = (n: number) => (n / 1048576).toFixed(0);
    return `| ${fmt(size.agents)} | ${fmt(size.openTasks)} | ${fmt(size.closedTasks)} | ${Math.round(listening)} | ${Math.round(loaded)} | ${mb(m.rss)} | ${mb(m.heapUsed)} | ${mb(m.heapTotal)} | ${mb(m.external)} |`;
  } finally {
    await new Promise<void>((resolve) => {
      proc.child.once('exit', () => resolve());
      proc.child.kill('SIGTERM');
    });
  }
}

async function main() {
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const { createSql } = await import('../db/client.js');
  const { throwawayDatabase } = await import('./lib.js');
  const { recordIssuedPassport } = await import('../db/queries/passports.js');
  const { storeBatch } = await import('../db/queries/chainEvents.js');
  const { startLedgerStack } = await import('../test/support/ledgerStack.js');
  const { startOtlpReceiver } = await import('../test/support/otlpReceiver.js');

  const db = await throwawayDatabase('http');
  const dbUrl = db.url;
  const sql = createSql(dbUrl, { max: 2 });
  const stack = await startLedgerStack('bench-http');
  const tmp = mkdtempSync(path.join(os.tmpdir(), 'bench-http-'));
  const children: ChildProcess[] = [];
  let receiver: Awaited<ReturnType<typeof startOtlpReceiver>> | undefined;
  try {
    // data: one passport per localnet account, 50 chain events
    const agents = stack.localnet.config.accounts;
    const tokenId = stack.deployment.passportTokenId;
    for (const [i, a] of agents.entries()) {
      await recordIssuedPassport(sql, {
        network: 'local',
        tokenId,
        serial: i + 1,
        accountId: a.accountId,
        did: a.did,
        tier: 'gold',
        capabilities: ['api_call', 'data_consume', 'data_provide', 'payment'],
        endpoint: `https://agent-${i}.example/a2a`,
        issuedAtMs: 1_700_000_000_000 + i,
        paymentTransactionId: `${a.accountId}@1700000000.${String(i).padStart(9, '0')}`,
      });
    }
    await storeBatch(sql, {
      chainId: CHAIN_ID,
      source: 'passport',
      contractAddress: '0x00000000000000000000000000000000000000aa',
      expectedCheckpoint: -1,
      toBlock: 60,
      toBlockHash: `0x${'ab'.repeat(32)}`,
      events: Array.from({ length: 50 }, (_, i) => ({
        chainId: CHAIN_ID,
        source: 'passport' as const,
        contractAddress: '0x00000000000000000000000000000000000000aa',
        blockNumber: i + 1,
        blockHash: `0x${(i + 1).toString(16).padStart(64, '0')}`,
        txHash: `0x${(1000 + i).toString(16).padStart(64, '0')}`,
        txIndex: 0,
        logIndex: 0,
        eventName: i % 2 ? 'Transfer' : 'PassportMinted',
        args: { tokenId: String(i + 1), to: `0x${'cd'.repeat(20)}`, tier: 2 },
      })),
    });

    // the seeded sizes (issue 31): each one's memory and start-up in a fresh app process; the routes are measured at the last
    const footprints: string[] = [];
    for (const size of SIZES) {
      await seedDatabase(sql, size, (line) => log(`  seed ${line}`));
      footprints.push(await footprint(size, appEnv({ ...stack.env, DATABASE_URL: dbUrl })));
    }

    const agent = agents[0]!;
    const routes = [
      { name: '/catalog', path: '/catalog' },
      { name: '/did/{did}', path: `/did/${agent.did}` },
      { name: '/passport/{tokenId}/{serial}', path: `/passport/${tokenId}/1` },
      { name: '/passport/address/{address}', path: `/passport/address/${agent.accountId}` },
      { name: '/agents?limit=20', path: '/agents?limit=20' },
      { name: '/agents/{did}', path: `/agents/${seedDid(0)}` },
      { name: '/market/tasks?limit=20', path: '/market/tasks?limit=20' },
      { name: '/market/tasks?status=completed&limit=20', path: '/market/tasks?status=completed&limit=20' },
      { name: '/api/search?q=oracle', path: '/api/search?q=oracle' },
      { name: '/events?limit=20', path: '/events?limit=20' },
      { name: '/health', path: '/health' },
    ];

    const appProc = await startChild('serve-app', appEnv({ ...stack.env, DATABASE_URL: dbUrl }));
    children.push(appProc.child);
    const appBase = `http://127.0.0.1:${appProc.port}`;
    const bodies: Array<{ path: string; body: string }> = [];
    for (const r of routes) {
      const res = await fetch(`${appBase}${r.path}`);
      const body = await res.text();
      if (res.status !== 200) throw new Error(`app ${r.path}: ${res.status} ${body}`);
      bodies.push({ path: r.path, body });
    }
    const bodiesFile = path.join(tmp, 'bodies.json');
    writeFileSync(bodiesFile, JSON.stringify(bodies));
    const bareProc = await startChild('serve-bare', { BENCH_BODIES: bodiesFile });
    children.push(bareProc.child);
    const bareBase = `http://127.0.0.1:${bareProc.port}`;

    // the same app with operators' telemetry on: metrics only, then metrics and traces to a local OTLP receiver
    const servers: Array<Server & { name: string }> = [{ name: 'app', base: appBase, child: appProc.child }];
    if (process.env.BENCH_TELEMETRY !== '0') {
      receiver = await startOtlpReceiver({ keep: false });
      const variants: Array<{ name: string; env: Record<string, string> }> = [
        { name: 'app +metrics', env: { METRICS_PORT: '0' } },
        { name: 'app +metrics +traces', env: { METRICS_PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url } },
        // what a busy deployment runs: one request in twenty traced (the others make no recording span)
        { name: 'app +metrics +traces 5%', env: { METRICS_PORT: '0', OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url, OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.05' } },
      ];
      for (const v of variants) {
        const proc = await startChild('serve-app', appEnv({ ...stack.env, DATABASE_URL: dbUrl, ...v.env }));
        children.push(proc.child);
        servers.push({ name: v.name, base: `http://127.0.0.1:${proc.port}`, child: proc.child });
      }
    }
    servers.push({ name: 'bare', base: bareBase, child: bareProc.child });
    // the same bytes everywhere (a process's own uptime in /health aside)
    const sameBody = (s: string) => s.replace(/"uptimeSeconds":[\d.]+/, '"uptimeSeconds":0');
    for (const b of bodies) {
      for (const server of servers.slice(1)) {
        const got = await (await fetch(`${server.base}${b.path}`)).text();
        if (sameBody(got) !== sameBody(b.body)) throw new Error(`${b.path}: ${server.name} does not answer the same bytes`);
      }
    }

    // BENCH_ROUTES=/health,/did: measure only the routes whose name starts with one of these
    const only = process.env.BENCH_ROUTES?.split(',');
    if (only) routes.splice(0, routes.length, ...routes.filter((r) => only.some((o) => r.name.startsWith(o))));
    log(`measuring ${routes.length} routes: ${ROUNDS} rounds of ${SECONDS} s per server (${servers.map((s) => s.name).join(', ')}), alternating, ${CONNECTIONS} connections`);
    const rows: string[] = [];
    for (const r of routes) {
      const results = await compare(servers, r.path);
      const bare = results[results.length - 1]!;
      for (const [k, server] of servers.slice(0, -1).entries()) {
        const x = results[k]!;
        rows.push(
          `| ${r.name} | ${server.name} | ${Math.round(x.rps).toLocaleString('en-US')} | ${x.p99} | ${Math.round(bare.rps).toLocaleString('en-US')} | ${bare.p99} | ${(x.ratio * 100).toFixed(0)}% | ${Math.round(x.cpu)} | ${Math.round(bare.cpu)} | ${(x.cpuRatio * 100).toFixed(0)}% |`,
        );
      }
      log(`  ${r.name}: ${results.slice(0, -1).map((x, k) => `${servers[k]!.name} ${(x.ratio * 100).toFixed(0)}%`).join(', ')}`);
    }
    const bytes = Object.fromEntries(bodies.map((b) => [b.path, b.body.length]));
    console.log(`\nHot reads over HTTP, ${ROUNDS} alternating rounds of ${SECONDS} s per route and server, ${CONNECTIONS} connections (autocannon), same run`);
    if (receiver) console.log(`OTLP receiver: ${receiver.requests().count} export requests, ${(receiver.requests().bytes / 1e6).toFixed(1)} MB of spans received`);
    console.log(`${new Date().toISOString()} | ${os.cpus().length} x ${os.cpus()[0]?.model ?? 'cpu'} | node ${process.version} | load average ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
    console.log('| route | server | req/s | p99 ms | bare req/s | bare p99 ms | req/s / bare | CPU µs/req | bare CPU µs/req | CPU bare / server |');
    console.log('|---|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const row of rows) console.log(row);
    console.log(`\nbody sizes (bytes): ${JSON.stringify(bytes)}`);
    console.log('\nMemory and start-up of one API process per seeded size (a fresh process each; memory after a full GC once every cache is loaded)\n');
    console.log('| agents | open tasks | closed tasks | listening ms | caches loaded ms | RSS MB | heap used MB | heap total MB | external MB |');
    console.log('|---:|---:|---:|---:|---:|---:|---:|---:|---:|');
    for (const row of footprints) console.log(row);
  } finally {
    await Promise.all(
      children.map(
        (c) =>
          new Promise<void>((resolve) => {
            if (c.exitCode !== null) return resolve();
            c.once('exit', () => resolve());
            c.kill('SIGTERM');
            setTimeout(() => (c.kill('SIGKILL'), resolve()), 5_000).unref();
          }),
      ),
    );
    await receiver?.close();
    await sql.end();
    await stack.stop();
    await db.drop();
    rmSync(tmp, { recursive: true, force: true });
  }
}

const mode = process.argv[2];
const entry = mode === 'serve-app' ? serveApp : mode === 'serve-bare' ? serveBare : main;
entry().catch((err) => {
  console.error(err);
  process.exit(1);
});
