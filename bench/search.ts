/**
 * Benchmark of GET /api/search (never run by `npm test`):
 *   npx tsx bench/search.ts        (BENCH_AGENTS=100000 BENCH_TASKS=100000 BENCH_INJECTS=2000)
 *
 * BENCH_AGENTS registered agents and BENCH_TASKS tasks are written to their PostgreSQL projections,
 * loaded by the real route plugins' NOTIFY-fed caches (the directory, the task book) and searched by
 * the real search route. Per query: latency at the handler (in-process fastify.inject, p50/p99, ms)
 * next to a bare Fastify route sending the same JSON, in the same run and the same process. The
 * queries range from a word every item has (the scan stops after `limit` results) to queries that
 * match nothing (the whole text of both kinds is scanned). The first query after a change rebuilds
 * the index; its time is printed separately.
 * PostgreSQL: DATABASE_URL, else 127.0.0.1:5432, else embedded; a throwaway database is created and
 * dropped.
 */
import { performance } from 'node:perf_hooks';
import Fastify, { type FastifyInstance } from 'fastify';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { createSql, type Sql } from '../db/client.js';
import { compiledSerializerCompiler } from '../api/serializer.js';
import errorHandler from '../api/plugins/errorHandler.js';
import agentsRoutes from '../api/routes/agents/index.js';
import { installAgentDirectory } from '../api/agents/directory.js';
import searchRoutes from '../api/routes/search.js';
import type { AppContext } from '../api/context.js';
import { testConfig } from '../test/support/app.js';
import { fmt, injectLatency, log, seedAgents, table, throwawayDatabase } from './lib.js';

const AGENTS = Number(process.env.BENCH_AGENTS ?? 100_000);
const TASKS = Number(process.env.BENCH_TASKS ?? 100_000);
const INJECTS = Number(process.env.BENCH_INJECTS ?? 2_000);

async function seed(sql: Sql): Promise<void> {
  await seedAgents(sql, AGENTS);
  // task records as the marketplace writes them; descriptions of ~150 characters
  await sql.unsafe(`
    insert into tasks (task_id, status, escrow_status, poster_did, claimer_did, price_tinybars, capabilities, seq, record, created_at, updated_at)
    select id::uuid, 'posted', 'none', 'did:hedera:local:0.0.1001', null, 100000000::bigint * (1 + i % 90), caps, 1,
           jsonb_build_object(
             'taskId', id, 'title', 'Task ' || i || ': ' || (array['translate','summarise','classify','label','transcribe'])[1 + i % 5] || ' batch ' || (i % 977),
             'description', 'Process dataset ' || (i % 1000) || ' of the ' || (array['retail','weather','shipping','finance','energy'])[1 + i % 5] ||
               ' archive into normalised JSON records, check every field against the schema, and report rows that fail with the reason. Ref ' || i,
             'priceHbar', 1 + i % 90, 'priceTinybars', (100000000::bigint * (1 + i % 90))::text, 'capabilities', caps, 'status', 'posted',
             'posterDid', 'did:hedera:local:0.0.1001', 'claimerDid', null, 'scheduleId', null, 'topUpScheduleId', null,
             'escrowStatus', 'none', 'escrowedTinybars', '0', 'verificationAttempts', 0, 'verifierType', 'none', 'verifierConfig', null,
             'deadline', null, 'resultBody', null, 'resultIpfs', null, 'resultSha256', null, 'paymentTxId', null, 'refundTxId', null,
             'feeBps', 250, 'escrow', false, 'createdAt', to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'updatedAt', to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')),
           ts, ts
      from (select i, '01890000-0000-7000-8000-' || lpad(to_hex(i), 12, '0') as id,
                   jsonb_build_array((array['data_provide','api_call','payment'])[1 + i % 3]) as caps,
                   now() - make_interval(secs => ${TASKS} - i) as ts
              from generate_series(1, ${TASKS}) as i) s`);
}

async function main() {
  const db = await throwawayDatabase('search');
  const url = db.url;
  const sql = createSql(url, { max: 4 });
  try {
    log(`seeding ${fmt(AGENTS)} agents and ${fmt(TASKS)} tasks`);
    await seed(sql);
    const ctx: AppContext = { config: testConfig({}), sql, ledger: { deployment: { network: 'local' } } as never };
    const app = Fastify({ logger: false });
    app.setValidatorCompiler(validatorCompiler);
    app.setSerializerCompiler(compiledSerializerCompiler);
    app.decorate('signedRequest', () => async () => {});
    await app.register(errorHandler, { bodyLimit: 1024 * 1024 });
    installAgentDirectory(app, sql);
    await app.register(agentsRoutes, { ctx });
    await app.register(searchRoutes, { ctx });
    await app.ready();

    const t0 = performance.now();
    for (;;) {
      const r = await app.inject({ url: '/api/search?q=agent-1&type=agent&limit=1' });
      if (r.statusCode === 200 && r.json().count === 1) break;
      await new Promise((res) => setTimeout(res, 20));
    }
    const loaded = performance.now() - t0;
    const t1 = performance.now();
    await app.inject({ url: '/api/search?q=x' });
    log(`caches loaded in ${fmt(loaded)} ms (includes the first index build)`);
    const rebuilt = performance.now() - t1;

    const queries: [string, string][] = [
      ['word in every task (stops at limit)', '/api/search?q=archive'],
      ['capability (many agents and tasks)', '/api/search?q=orchestration'],
      ['skill, many matches', '/api/search?q=skill-17'],
      ['one agent by name', `/api/search?q=agent-${Math.ceil(AGENTS / 2)}x`.replace(/x$/, '')],
      ['one agent by DID fragment', `/api/search?q=0.0.${100000 + Math.ceil(AGENTS / 3)}&type=agent`],
      ['one task by its reference', `/api/search?q=ref%20${Math.ceil(TASKS / 2)}&type=task`],
      ['no match (full scan of both)', '/api/search?q=zzzz-nothing'],
      ['no match, 200 characters', `/api/search?q=${'q'.repeat(199)}z`],
      ['limit 100, mixed', '/api/search?q=batch%2097&limit=100'],
    ];
    const bare = Fastify({ logger: false });
    const bodies = new Map<string, string>();
    bare.get('/bare/:i', async (req, reply) => reply.type('application/json').send(bodies.get((req.params as { i: string }).i)));
    await bare.ready();
    const rows: string[][] = [];
    for (const [i, [what, u]] of queries.entries()) {
      const p = await injectLatency(app, u, INJECTS);
      bodies.set(String(i), p.body);
      const b = await injectLatency(bare, `/bare/${i}`, INJECTS);
      rows.push([what, fmt((JSON.parse(p.body) as { count: number }).count), fmt(p.p50, 3), fmt(p.p99, 3), fmt(b.p50, 3), fmt(b.p99, 3), fmt(p.body.length)]);
    }
    table(
      `GET /api/search over ${fmt(AGENTS)} agents + ${fmt(TASKS)} tasks in memory: latency at the handler (fastify.inject, ${fmt(INJECTS)} requests each, ms), bare Fastify sending the same JSON`,
      ['query', 'results', 'p50', 'p99', 'bare p50', 'bare p99', 'bytes'],
      rows,
    );
    console.log(`\nIndex: caches loaded and first index built in ${fmt(loaded)} ms; a query right after (no change) took ${fmt(rebuilt, 2)} ms.`);
    await app.close();
    await bare.close();
  } finally {
    await sql.end();
    await db.drop();
  }
}

await main();
