/** Helpers shared by the benchmarks in bench/. */
import { performance } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';
import type { Sql } from '../db/client.js';
import { CAPABILITIES } from '../domain/capabilities.js';
import { TIERS } from '../domain/tiers.js';
import { dropDatabase, ensureDatabase, migrate } from '../db/migrate.js';
import { resolvePostgres } from '../scripts/lib/postgres.js';

export const log = (s: string) => process.stderr.write(`${s}\n`);

/**
 * A migrated throwaway database for one bench run: on the server DATABASE_URL names (never that
 * database itself), else 127.0.0.1:5432, else embedded PostgreSQL. `drop()` removes it and stops
 * an embedded server.
 */
export async function throwawayDatabase(name: string): Promise<{ url: string; drop(): Promise<void> }> {
  const database = `agent_passport_bench_${name}_${Date.now()}_${process.pid}`;
  const pg = await resolvePostgres({ databaseUrl: process.env.DATABASE_URL, dataDir: '.data/postgres-bench', database, log });
  const u = new URL(pg.url);
  u.pathname = `/${database}`;
  const url = u.toString();
  await ensureDatabase(url);
  await migrate(url);
  return {
    url,
    async drop() {
      await dropDatabase(url).catch(() => {});
      await pg.stop();
    },
  };
}
export const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });

export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function table(title: string, header: string[], rows: string[][]) {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join(' | ')} |`;
  console.log(`\n${title}`);
  console.log(line(header));
  console.log(`|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`);
  for (const r of rows) console.log(line(r));
}

/** `count` registered agents (dids 0.0.100001...): capabilities, skills and tiers spread so every filter has work to do. */
export async function seedAgents(sql: Sql, count: number): Promise<void> {
  await sql.unsafe(`
    insert into agents (did, network, account_id, token_id, serial, name, capabilities, skills, endpoint, tier,
                        registered_at, active, status, directory_sequence)
    select 'did:hedera:local:0.0.' || (100000 + i), 'local', '0.0.' || (100000 + i), '0.0.900', i,
           'agent-' || i,
           (select coalesce(jsonb_agg(c), '[]'::jsonb) from jsonb_array_elements_text('${JSON.stringify(CAPABILITIES)}'::jsonb) with ordinality as t(c, k)
             where (i >> (k::int - 1)) & 1 = 1),
           jsonb_build_array('skill-' || (i % 500), 'lang-' || (i % 7)),
           'https://agent-' || i || '.example.com/a2a',
           (array${JSON.stringify(TIERS).replace(/"/g, "'")})[1 + i % 4],
           now() - make_interval(secs => ${count} - i), (i % 50) <> 0, 'registered', i
      from generate_series(1, ${count}) as i`);
}

/** Latency of `requests` in-process requests (after 200 warm-up ones): p50, p99 in ms, and the last body. */
export async function injectLatency(app: FastifyInstance, url: string, requests: number): Promise<{ p50: number; p99: number; body: string }> {
  let body = '';
  for (let i = 0; i < 200; i++) body = (await app.inject({ url })).body; // warm-up
  const times: number[] = [];
  for (let i = 0; i < requests; i++) {
    const t = performance.now();
    const res = await app.inject({ url });
    times.push(performance.now() - t);
    if (res.statusCode !== 200) throw new Error(`${url}: ${res.statusCode} ${res.body.slice(0, 200)}`);
  }
  times.sort((a, b) => a - b);
  return { p50: percentile(times, 50), p99: percentile(times, 99), body };
}
