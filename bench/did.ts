/**
 * Benchmark of DID resolution, GET /did/{did} (never run by `npm test`):
 *   npx tsx bench/did.ts        (BENCH_DIDS=6 BENCH_REQUESTS=3000)
 *
 * A localnet on free ports supplies real account keys through its mirror; passports are projected
 * into a throwaway database. In the same run it measures, through fastify's inject (no network):
 *   - baseline: the work without the cache (PostgreSQL lookup + mirror key read + document build),
 *   - the served path: the in-memory document cache the route keeps,
 * and prints requests/s and latency percentiles side by side.
 */
import { performance } from 'node:perf_hooks';
import { createSql } from '../db/client.js';
import { dropDatabase, ensureDatabase, migrate } from '../db/migrate.js';
import { recordIssuedPassport } from '../db/queries/passports.js';
import { resolvePostgres } from '../scripts/lib/postgres.js';
import { buildTestApp } from '../test/support/app.js';
import { startLedgerStack } from '../test/support/ledgerStack.js';
import { passportStateFor } from '../api/passportState.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 3_000);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

async function main() {
  const log = (s: string) => process.stderr.write(`${s}\n`);
  const database = `agent_passport_bench_did_${Date.now()}_${process.pid}`;
  const pg = await resolvePostgres({ databaseUrl: process.env.DATABASE_URL, dataDir: '.data/postgres-bench', database, log });
  await ensureDatabase(pg.url);
  await migrate(pg.url);
  const sql = createSql(pg.url, { max: 4 });
  const stack = await startLedgerStack('bench-did');
  const app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '10000000' }, { sql, ledger: stack.ledger });
  const state = passportStateFor(stack.ledger);
  try {
    const agents = stack.localnet.config.accounts;
    for (const [i, a] of agents.entries()) {
      await recordIssuedPassport(sql, {
        network: 'local',
        tokenId: stack.deployment.passportTokenId,
        serial: i + 1,
        accountId: a.accountId,
        did: a.did,
        tier: 'gold',
        capabilities: ['api_call', 'data_consume', 'data_provide', 'payment'],
        endpoint: `https://agent-${i}.example/a2a`,
        issuedAtMs: Date.now(),
        paymentTransactionId: `${a.accountId}@1700000000.${String(i).padStart(9, '0')}`,
      });
    }
    const dids = agents.map((a) => a.did);

    const run = async (label: string, cacheTtlMs: number) => {
      state.didCacheTtlMs = cacheTtlMs;
      state.didCache.clear();
      for (const did of dids) {
        const r = await app.inject(`/did/${did}`); // warm-up (and cache fill when enabled)
        if (r.statusCode !== 200) throw new Error(`${label}: ${r.statusCode} ${r.body}`);
      }
      const latencies: number[] = [];
      const start = performance.now();
      for (let i = 0; i < REQUESTS; i++) {
        const t0 = performance.now();
        const r = await app.inject(`/did/${dids[i % dids.length]}`);
        latencies.push(performance.now() - t0);
        if (r.statusCode !== 200) throw new Error(`${label}: ${r.statusCode}`);
      }
      const seconds = (performance.now() - start) / 1000;
      latencies.sort((a, b) => a - b);
      return { label, rps: REQUESTS / seconds, p50: percentile(latencies, 50), p99: percentile(latencies, 99) };
    };

    const baseline = await run('no cache: PostgreSQL + mirror key + build (baseline)', 0);
    const cached = await run('in-memory cache (served path)', 60_000);
    const rows = [baseline, cached];
    console.log(`\nGET /did/{did}, ${REQUESTS} requests over ${dids.length} DIDs, fastify inject, one connection at a time\n`);
    console.log('| path | req/s | p50 ms | p99 ms | vs baseline |');
    console.log('|---|---:|---:|---:|---:|');
    for (const r of rows) {
      console.log(`| ${r.label} | ${Math.round(r.rps).toLocaleString('en-US')} | ${r.p50.toFixed(3)} | ${r.p99.toFixed(3)} | ${(r.rps / baseline.rps).toFixed(1)}x |`);
    }
  } finally {
    await app.close();
    await stack.stop();
    await sql.end();
    if (!process.env.DATABASE_URL) await dropDatabase(pg.url).catch(() => {});
    await pg.stop();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
