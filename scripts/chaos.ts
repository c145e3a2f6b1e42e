/**
 * `npm run test:chaos` (issue 13): the chaos run of test/chaos/chaos.ts at full size, on its own
 * PostgreSQL database and Temporal dev server. Prints the table and exits 1 on any violation.
 *
 * Parameters (flags or environment):
 *   --issuances N   CHAOS_ISSUANCES    agents buying one passport each (default 1000)
 *   --lifecycles N  CHAOS_LIFECYCLES   task lifecycles (default 1000)
 *   --kills N       CHAOS_KILLS        SIGKILLs spread over the run (default 100)
 *   --targets a,b   CHAOS_TARGETS      processes to kill: worker,api,localnet (default all three)
 *   --faults 0|1    CHAOS_FAULTS       localnet faults between kills (default 1)
 *   --concurrency N CHAOS_CONCURRENCY  operations in flight (default 8)
 *   --settle-ms N   CHAOS_SETTLE_MS    time the end state may take to settle (default 300000)
 *   --op-timeout-ms N CHAOS_OP_TIMEOUT_MS  a client gives up on one request after this (default 600000)
 *   --seed N        CHAOS_SEED         choices (targets, moments, prices, endings)
 * TEST_DATABASE_URL and TEMPORAL_ADDRESS use existing services instead of starting them.
 */
import { parseArgs } from 'node:util';
import { freePort } from './lib/ports.js';
import { resolvePostgres } from './lib/postgres.js';
import { startTemporalDevServer } from './lib/temporalServer.js';
import { ensureDatabase } from '../db/migrate.js';
import { formatReport, runChaos, type Target } from '../test/chaos/chaos.js';

const { values } = parseArgs({
  options: {
    issuances: { type: 'string' },
    lifecycles: { type: 'string' },
    kills: { type: 'string' },
    targets: { type: 'string' },
    faults: { type: 'string' },
    concurrency: { type: 'string' },
    'settle-ms': { type: 'string' },
    'op-timeout-ms': { type: 'string' },
    seed: { type: 'string' },
  },
});

function num(flag: string | undefined, env: string, def: number): number {
  const raw = flag ?? process.env[env];
  if (raw === undefined || raw === '') return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) {
    console.error(`${env} must be a whole number, got "${raw}"`);
    process.exit(2);
  }
  return n;
}

const targets = (values.targets ?? process.env.CHAOS_TARGETS ?? 'worker,api,localnet').split(',').map((t) => t.trim()) as Target[];
if (!targets.length || targets.some((t) => !['worker', 'api', 'localnet'].includes(t))) {
  console.error('CHAOS_TARGETS: a comma-separated list of worker, api, localnet');
  process.exit(2);
}

const log = (line: string) => console.log(line);
const pg = await resolvePostgres({ databaseUrl: process.env.TEST_DATABASE_URL, dataDir: '.data/postgres-chaos', database: `agent_passport_chaos_${process.pid}`, log });
await ensureDatabase(pg.url);
const temporal = process.env.TEMPORAL_ADDRESS ? undefined : await startTemporalDevServer({ port: await freePort(), log: (line) => { if (!line.startsWith('temporal:')) log(line); } });
let code = 1;
try {
  const report = await runChaos({
    issuances: num(values.issuances, 'CHAOS_ISSUANCES', 1000),
    lifecycles: num(values.lifecycles, 'CHAOS_LIFECYCLES', 1000),
    kills: num(values.kills, 'CHAOS_KILLS', 100),
    targets,
    faults: num(values.faults, 'CHAOS_FAULTS', 1) !== 0,
    concurrency: Math.max(1, num(values.concurrency, 'CHAOS_CONCURRENCY', 8)),
    settleMs: num(values['settle-ms'], 'CHAOS_SETTLE_MS', 300_000),
    opTimeoutMs: num(values['op-timeout-ms'], 'CHAOS_OP_TIMEOUT_MS', 600_000),
    seed: num(values.seed, 'CHAOS_SEED', Date.now() % 1_000_000),
    databaseUrl: pg.url,
    temporalAddress: process.env.TEMPORAL_ADDRESS ?? temporal!.address,
    log,
  });
  console.log(formatReport(report));
  code = report.violations.length ? 1 : 0;
} catch (err) {
  console.error('chaos run failed:', err);
} finally {
  await temporal?.stop();
  await pg.stop();
}
process.exit(code);
