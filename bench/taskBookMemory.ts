/**
 * Resident memory of an API process holding open tasks (never run by `npm test`; issue 20 item 2):
 *   npx tsx bench/taskBookMemory.ts            (BENCH_OPEN=100000 BENCH_CLOSED=100000)
 *
 * The real app (buildApp, as api/server.ts builds it: every plugin on, over a localnet's deployment)
 * runs in a child process per scenario, each on its own throwaway database:
 *   baseline        no task at all
 *   open            BENCH_OPEN open tasks (posted, claimed, delivered)
 *   open + closed   the same open tasks and BENCH_CLOSED completed or cancelled ones
 * The parent reads GET /market/tasks?status=posted until the task book has loaded everything, then
 * the child collects garbage (--expose-gc) and reports process.memoryUsage(). Printed: RSS and heap
 * per scenario, the difference to the baseline, and the bytes per open task. Closed tasks are not
 * held (they leave the book; reads fall back to PostgreSQL), so the third row should sit next to the
 * second. Task records are shaped as the marketplace writes them (descriptions of ~150 characters).
 */
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { spawn, type ChildProcess } from 'node:child_process';
import pino from 'pino';
import type { Sql } from '../db/client.js';

const OPEN = Number(process.env.BENCH_OPEN ?? 100_000);
const CLOSED = Number(process.env.BENCH_CLOSED ?? 100_000);
const self = fileURLToPath(import.meta.url);

// ------------------------------------------------------------------ child: the real app

async function serve() {
  const { loadConfig } = await import('../config/index.js');
  const { createSql } = await import('../db/client.js');
  const { apiLedgerContext } = await import('../api/context.js');
  const { buildApp } = await import('../api/app.js');
  const config = loadConfig(process.env);
  const sql = createSql(config.DATABASE_URL!);
  const ledger = apiLedgerContext(config);
  const app = await buildApp({ config, sql, ledger }, { logger: { stream: pino.destination('/dev/null') } });
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.on('message', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    for (let i = 0; i < 3; i++) {
      gc?.();
      await new Promise((r) => setTimeout(r, 200));
    }
    process.send!(JSON.stringify(process.memoryUsage()));
  });
  process.once('SIGTERM', () => process.exit(0));
  process.stdout.write(`LISTENING ${(app.server.address() as { port: number }).port}\n`);
}

// ------------------------------------------------------------------ parent

/** `count` tasks of the given statuses (spread over them), ids from `first`, as the marketplace writes them. */
async function seedTasks(sql: Sql, first: number, count: number, statuses: string[]): Promise<void> {
  if (count <= 0) return;
  const list = `array[${statuses.map((s) => `'${s}'`).join(',')}]`;
  await sql.unsafe(`
    insert into tasks (task_id, status, escrow_status, poster_did, claimer_did, price_tinybars, capabilities, seq, record, created_at, updated_at)
    select id::uuid, st, esc, poster, claimer, 100000000::bigint * (1 + i % 90), caps, 3,
           jsonb_build_object(
             'taskId', id, 'title', 'Task ' || i || ': ' || (array['translate','summarise','classify','label','transcribe'])[1 + i % 5] || ' batch ' || (i % 977),
             'description', 'Process dataset ' || (i % 1000) || ' of the ' || (array['retail','weather','shipping','finance','energy'])[1 + i % 5] ||
               ' archive into normalised JSON records, check every field against the schema, and report rows that fail with the reason. Ref ' || i,
             'priceHbar', 1 + i % 90, 'priceTinybars', (100000000::bigint * (1 + i % 90))::text, 'capabilities', caps, 'status', st,
             'posterDid', poster, 'claimerDid', claimer, 'scheduleId', '0.0.' || (500000 + i), 'topUpScheduleId', null,
             'escrowStatus', esc, 'escrowedTinybars', '0', 'verificationAttempts', 0, 'verifierType', 'none', 'verifierConfig', null,
             'deadline', null, 'resultBody', null, 'resultIpfs', null, 'resultSha256', null, 'paymentTxId', null, 'refundTxId', null,
             'feeBps', 250, 'escrow', true, 'createdAt', to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'updatedAt', to_char(ts at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'claimWindowSeconds', 86400, 'claimEndsAt', null, 'reviewWindowSeconds', 259200, 'reviewEndsAt', null,
             'fundingWindowSeconds', 86400, 'fundingEndsAt', to_char((ts + interval '1 day') at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
             'deliveredAt', null, 'verification', null),
           ts, ts
      from (select i, '01890000-0000-7000-8000-' || lpad(to_hex(i), 12, '0') as id,
                   (${list})[1 + i % ${statuses.length}] as st,
                   'did:hedera:local:0.0.' || (100000 + i % 5000) as poster,
                   case when (${list})[1 + i % ${statuses.length}] = 'posted' then null else 'did:hedera:local:0.0.' || (200000 + i % 5000) end as claimer,
                   case when (${list})[1 + i % ${statuses.length}] in ('posted', 'claimed', 'delivered') then 'funded' else 'released' end as esc,
                   jsonb_build_array((array['data_provide','api_call','payment'])[1 + i % 3]) as caps,
                   now() - make_interval(secs => ${first + count} - i) as ts
              from generate_series(${first}, ${first + count - 1}) as i) s`);
}

function startChild(env: Record<string, string>): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, ['--expose-gc', '--import', 'tsx', self, 'serve'], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'inherit', 'ipc'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
      const m = /LISTENING (\d+)/.exec(out);
      if (m) resolve({ child, port: Number(m[1]) });
    });
    child.once('exit', (code) => reject(new Error(`child exited with ${code}`)));
  });
}

function memoryOf(child: ChildProcess): Promise<NodeJS.MemoryUsage> {
  return new Promise((resolve) => {
    child.once('message', (m) => resolve(JSON.parse(String(m)) as NodeJS.MemoryUsage));
    child.send('memory');
  });
}

async function main() {
  const { createSql } = await import('../db/client.js');
  const { throwawayDatabase, fmt, log, table } = await import('./lib.js');
  const { startLedgerStack } = await import('../test/support/ledgerStack.js');
  const stack = await startLedgerStack('bench-taskbook');
  const scenarios = [
    { name: 'baseline (no task)', open: 0, closed: 0 },
    { name: `${fmt(OPEN)} open`, open: OPEN, closed: 0 },
    { name: `${fmt(OPEN)} open + ${fmt(CLOSED)} closed`, open: OPEN, closed: CLOSED },
  ];
  const rows: string[][] = [];
  let base: NodeJS.MemoryUsage | null = null;
  try {
    for (const sc of scenarios) {
      const db = await throwawayDatabase(`taskbook${sc.open}_${sc.closed}`);
      const sql = createSql(db.url, { max: 2 });
      let child: ChildProcess | undefined;
      try {
        log(`${sc.name}: seeding`);
        await seedTasks(sql, 1, sc.open, ['posted', 'claimed', 'delivered']);
        await seedTasks(sql, sc.open + 1, sc.closed, ['completed', 'cancelled']);
        await sql`vacuum analyze tasks`.catch(() => undefined);
        const proc = await startChild({ ...stack.env, DATABASE_URL: db.url, LOG_LEVEL: 'warn', RATE_LIMIT_MAX: '1000000000', NODE_ENV: 'development' });
        child = proc.child;
        const baseUrl = `http://127.0.0.1:${proc.port}`;
        const t0 = Date.now();
        // the seed gives task i the status statuses[i % 3]: posted when i % 3 == 0
        let wantPosted = 0;
        for (let i = 1; i <= sc.open; i++) if (i % 3 === 0) wantPosted++;
        let held = -1;
        for (;;) {
          const res = await fetch(`${baseUrl}/market/tasks?status=posted&limit=1`);
          if (res.status === 200) {
            const b = (await res.json()) as { total: number };
            if (b.total >= wantPosted) {
              held = b.total;
              break;
            }
          }
          if (Date.now() - t0 > 300_000) throw new Error(`${sc.name}: the task book did not load`);
          await new Promise((r) => setTimeout(r, 200));
        }
        log(`${sc.name}: loaded in ${fmt(Date.now() - t0)} ms (${fmt(held)} posted in memory)`);
        const m = await memoryOf(child);
        base ??= m;
        const extra = m.rss - base.rss;
        rows.push([
          sc.name,
          fmt(sc.open),
          fmt(sc.closed),
          fmt(m.rss / 2 ** 20, 1),
          fmt(m.heapUsed / 2 ** 20, 1),
          fmt(extra / 2 ** 20, 1),
          sc.open > 0 ? fmt(extra / sc.open) : '-',
        ]);
      } finally {
        child?.kill('SIGTERM');
        await sql.end();
        await db.drop();
      }
    }
  } finally {
    await stack.stop();
  }
  table(
    `Resident memory of an API process (buildApp, every plugin on) holding open tasks in its task book; ${os.cpus().length} CPUs, Node ${process.version}`,
    ['scenario', 'open tasks', 'closed tasks', 'RSS MiB', 'heap used MiB', 'RSS over baseline MiB', 'bytes per open task'],
    rows,
  );
}

if (process.argv[2] === 'serve') await serve();
else await main();
