/**
 * Benchmark of the agent directory (never run by `npm test`):
 *   npx tsx bench/directory.ts        (BENCH_AGENTS=100000 BENCH_INJECTS=2000 BENCH_SECONDS=5 BENCH_MESSAGES=100000)
 *
 * 1. GET /agents over BENCH_AGENTS registered agents held in memory (the real route plugin, its
 *    NOTIFY-fed cache loaded from PostgreSQL): per query shape, latency at the handler (in-process
 *    fastify.inject, p50/p99) next to a bare Fastify route answering the same JSON, then HTTP
 *    throughput with autocannon for both, in the same run and the same process.
 * 2. The directory rebuild (the activity the directoryRebuild workflow runs) over BENCH_MESSAGES
 *    directory topic messages on a localnet, next to a raw read of the same topic through the
 *    mirror REST API (the floor: the rebuild reads exactly that, then parses, replays and writes).
 *    The messages are placed in localnet's topic state directly (submitting 100,000 transactions
 *    would measure the ledger, not the rebuild).
 * PostgreSQL: DATABASE_URL, else 127.0.0.1:5432, else embedded; a throwaway database is created
 * and dropped.
 */
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createSql, type Sql } from '../db/client.js';
import { compiledSerializerCompiler } from '../api/serializer.js';
import errorHandler from '../api/plugins/errorHandler.js';
import agentsRoutes from '../api/routes/agents/index.js';
import { installAgentDirectory } from '../api/agents/directory.js';
import type { AppContext } from '../api/context.js';
import { createDirectoryLedgerActivities } from '../activities/ledger/directory.js';
import { createLedgerServices } from '../ledger/services.js';
import type { AgentRegisteredMessage } from '../domain/directory.js';
import { testConfig } from '../test/support/app.js';
import { startLedgerStack } from '../test/support/ledgerStack.js';
import { fmt, injectLatency, log, seedAgents, table, throwawayDatabase } from './lib.js';

/** autocannon ships no types; the part used here. */
const autocannon = createRequire(import.meta.url)('autocannon') as (opts: { url: string; connections: number; duration: number }) => Promise<{
  non2xx: number;
  errors: number;
  requests: { average: number };
  latency: { p50: number; p99: number };
}>;

const AGENTS = Number(process.env.BENCH_AGENTS ?? 100_000);
const INJECTS = Number(process.env.BENCH_INJECTS ?? 2_000);
const SECONDS = Number(process.env.BENCH_SECONDS ?? 5);
const MESSAGES = Number(process.env.BENCH_MESSAGES ?? 100_000);

function productApp(sql: Sql): { app: FastifyInstance; ctx: AppContext } {
  const config = testConfig({});
  // GET /agents needs PostgreSQL (the cache) and the network name only; the rest of the ledger
  // context is never touched by the read routes.
  const ctx: AppContext = { config, sql, ledger: { deployment: { network: 'local' } } as never };
  const app = Fastify({ logger: false });
  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(compiledSerializerCompiler);
  app.decorate('signedRequest', () => async () => {});
  return { app, ctx };
}

async function cannon(url: string): Promise<{ rps: number; p50: number; p99: number }> {
  const r = await autocannon({ url, connections: 16, duration: SECONDS });
  if (r.non2xx > 0 || r.errors > 0) throw new Error(`${url}: ${r.non2xx} non-2xx, ${r.errors} errors`);
  return { rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99 };
}

async function benchQueries(sql: Sql) {
  log(`seeding ${fmt(AGENTS)} agents`);
  await seedAgents(sql, AGENTS);
  const { app, ctx } = productApp(sql);
  await app.register(errorHandler, { bodyLimit: 1024 * 1024 });
  installAgentDirectory(app, sql);
  await app.register(agentsRoutes, { ctx });
  await app.ready();
  const t0 = performance.now();
  for (;;) {
    const r = await app.inject({ url: '/agents?limit=1' });
    if (r.statusCode === 200 && r.json().total === AGENTS) break;
    await new Promise((res) => setTimeout(res, 20));
  }
  log(`directory loaded into memory in ${fmt(performance.now() - t0)} ms`);

  const queries: [string, string][] = [
    ['no filter, first page', '/agents'],
    ['no filter, offset 50,000', '/agents?offset=50000&limit=100'],
    ['capability', '/agents?capability=orchestration'],
    ['skill', '/agents?skill=skill-17'],
    ['name substring', '/agents?name=agent-9999'],
    ['skill + capability + page', '/agents?skill=lang-3&capability=payment&offset=200&limit=50'],
    ['one agent', `/agents/${encodeURIComponent(`did:hedera:local:0.0.${100000 + Math.ceil(AGENTS / 2)}`)}`],
  ];
  const bare = Fastify({ logger: false });
  const bodies = new Map<string, string>();
  bare.get('/bare/:i', async (req, reply) => reply.type('application/json').send(bodies.get((req.params as { i: string }).i)));
  await bare.ready();

  const latencyRows: string[][] = [];
  for (const [i, [what, url]] of queries.entries()) {
    const p = await injectLatency(app, url, INJECTS);
    bodies.set(String(i), p.body);
    const b = await injectLatency(bare, `/bare/${i}`, INJECTS);
    const total = (JSON.parse(p.body) as { total?: number }).total;
    latencyRows.push([what, total === undefined ? '1' : fmt(total), fmt(p.p50, 3), fmt(p.p99, 3), fmt(b.p50, 3), fmt(b.p99, 3), fmt(p.body.length)]);
  }
  table(
    `GET /agents over ${fmt(AGENTS)} agents in memory: latency at the handler (fastify.inject, ${fmt(INJECTS)} requests each, ms), bare Fastify sending the same JSON`,
    ['query', 'matches', 'p50', 'p99', 'bare p50', 'bare p99', 'bytes'],
    latencyRows,
  );

  await app.listen({ port: 0, host: '127.0.0.1' });
  await bare.listen({ port: 0, host: '127.0.0.1' });
  const base = (f: FastifyInstance) => `http://127.0.0.1:${(f.server.address() as { port: number }).port}`;
  const httpRows: string[][] = [];
  for (const i of [0, 3, 5]) {
    const [what, url] = queries[i]!;
    const p = await cannon(`${base(app)}${url}`);
    const b = await cannon(`${base(bare)}/bare/${i}`);
    httpRows.push([what, fmt(p.rps), fmt(p.p50, 1), fmt(p.p99, 1), fmt(b.rps), fmt(b.p50, 1), fmt(b.p99, 1)]);
  }
  table(
    `Over HTTP (autocannon, 16 connections, ${SECONDS} s each, client in the same process)`,
    ['query', 'req/s', 'p50 ms', 'p99 ms', 'bare req/s', 'bare p50', 'bare p99'],
    httpRows,
  );
  await app.close();
  await bare.close();
  await sql`delete from agents`;
}

async function benchRebuild(sql: Sql) {
  const stack = await startLedgerStack('bench-directory');
  try {
    const { deployment, mirror } = stack.ledger;
    const topicNum = Number(deployment.topics.directory.split('.')[2]);
    const topic = stack.localnet.engine.state.topics.get(topicNum);
    if (!topic) throw new Error(`directory topic ${deployment.topics.directory} not in localnet state`);
    log(`placing ${fmt(MESSAGES)} directory messages on ${deployment.topics.directory}`);
    const operator = Number(deployment.operator.accountId.split('.')[2]);
    let ns = BigInt(Date.now() - 3_600_000) * 1_000_000n;
    for (let i = 1; i <= MESSAGES; i++) {
      const m: AgentRegisteredMessage = {
        v: 1,
        type: 'agent.registered',
        did: `did:hedera:local:0.0.${200000 + i}`,
        accountId: `0.0.${200000 + i}`,
        tokenId: deployment.passportTokenId,
        serial: i,
        name: `agent-${i}`,
        capabilities: ['api_call', 'data_consume'],
        endpoint: `https://agent-${i}.example.com/a2a`,
        tier: 'bronze',
        timestamp: Number(ns / 1_000_000n),
        skills: [`skill-${i % 500}`],
      };
      topic.seq += 1n;
      ns += 1_000n;
      topic.messages.push({ topic: topicNum, seq: topic.seq, consensusNs: ns, message: new TextEncoder().encode(JSON.stringify(m)), runningHash: new Uint8Array(48), payer: operator, chunk: null });
    }

    const t1 = performance.now();
    const raw = await mirror.getTopicMessages(deployment.topics.directory, { limit: MESSAGES + 1_000 });
    const rawMs = performance.now() - t1;

    const t3 = performance.now();
    let joined = 0;
    for (let after = 0; ; ) {
      const page = await mirror.getJoinedTopicMessages(deployment.topics.directory, { afterSequence: after, maxRaw: 10_000 });
      joined += page.messages.length;
      if (page.nextAfterSequence <= after) break;
      after = page.nextAfterSequence;
    }
    const joinedMs = performance.now() - t3;

    const acts = createDirectoryLedgerActivities({ sql, ledger: createLedgerServices(stack.clients, { sql }) });
    const t2 = performance.now();
    const counts = (await new MockActivityEnvironment().run(acts.rebuildDirectoryProjection)) as Awaited<ReturnType<typeof acts.rebuildDirectoryProjection>>;
    const rebuildMs = performance.now() - t2;
    if (counts.agents !== MESSAGES || raw.length !== MESSAGES) throw new Error(`read ${raw.length} raw, rebuilt ${counts.agents} of ${MESSAGES}`);
    table(
      `Directory rebuild of ${fmt(MESSAGES)} topic messages from localnet's mirror (${fmt(Math.ceil(MESSAGES / 100))} pages of 100)`,
      ['measurement', 'messages', 'seconds', 'messages/s', 'vs raw'],
      [
        ['raw mirror read (paged)', fmt(raw.length), fmt(rawMs / 1000, 2), fmt(raw.length / (rawMs / 1000)), '100%'],
        ['mirror read, chunks joined (as the rebuild reads)', fmt(joined), fmt(joinedMs / 1000, 2), fmt(joined / (joinedMs / 1000)), `${fmt((rawMs / joinedMs) * 100)}%`],
        ['rebuild (read, parse, replay, write)', fmt(counts.agents), fmt(rebuildMs / 1000, 2), fmt(counts.agents / (rebuildMs / 1000)), `${fmt((rawMs / rebuildMs) * 100)}%`],
      ],
    );
  } finally {
    await stack.stop();
  }
}

async function main() {
  const db = await throwawayDatabase('dir');
  const url = db.url;
  const sql = createSql(url, { max: 6 });
  try {
    console.log(`agent directory benchmark, node ${process.version}`);
    if (process.env.BENCH_SKIP_QUERIES !== '1') await benchQueries(sql);
    if (process.env.BENCH_SKIP_REBUILD !== '1') await benchRebuild(sql);
  } finally {
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
