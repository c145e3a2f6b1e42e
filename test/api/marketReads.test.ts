// Reads at scale (issue 31): `npm run seed`'s dataset (scripts/lib/seed.ts) written into a fresh
// database through the projections' bulk writers reaches every API read through NOTIFY (directory,
// search, task lists), a second seed of the same size writes nothing, and the seed refuses databases
// that look like production. GET /market/tasks answers from memory (open tasks plus a window of the
// newest closed ones per status, here MARKET_CLOSED_IN_MEMORY=6) exactly what PostgreSQL holds, for
// every filter and page, with totals, and keeps doing so while tasks close below and above the
// windows' boundaries and the windows outgrow their bound.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import { pageTasks, upsertTask } from '../../db/queries/marketTasks.js';
import { CAPABILITIES } from '../../domain/capabilities.js';
import { TASK_STATUSES, type TaskRecord, type TaskStatus } from '../../domain/market.js';
import { seedAgentName, seedDatabase, seedDid, seedRefusal, seedTask, seedTier } from '../../scripts/lib/seed.js';
import { buildTestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';

const SIZE = { agents: 30, openTasks: 40, closedTasks: 90 };
const market = Array.from({ length: SIZE.agents }, (_, i) => i).filter((i) => ['gold', 'platinum'].includes(seedTier(i)));

interface TaskList {
  tasks: Array<{ taskId: string; status: string; resultBody?: unknown }>;
  count: number;
  total: number;
}

describe('reads at scale: the seeded dataset from memory', () => {
  let stack: LedgerStack;
  let app: FastifyInstance;
  let sql: Sql;
  let dbUrl = '';

  const get = async <T>(url: string) => {
    const res = await app.inject(url);
    expect(res.statusCode, `${url}: ${res.body.slice(0, 300)}`).toBe(200);
    return res.json() as T;
  };

  /** Every filter of GET /market/tasks against PostgreSQL's answer, on pages inside, across and past the windows. */
  const listsMatchPostgres = async () => {
    const filters: Array<{ status?: TaskStatus; capability?: string; posterDid?: string }> = [{}];
    for (const status of TASK_STATUSES) filters.push({ status }, { status, capability: 'payment' });
    for (const capability of CAPABILITIES) filters.push({ capability });
    filters.push({ posterDid: seedDid(market[1]!) }, { status: 'completed', posterDid: seedDid(market[2]!) }, { status: 'posted', posterDid: seedDid(market[3]!) });
    const mismatches: string[] = [];
    for (const f of filters) {
      for (const [limit, offset] of [
        [20, 0],
        [5, 3],
        [10, 8],
        [7, 30],
        [100, 0],
        [3, 140],
        [20, 500],
      ] as const) {
        const qs = new URLSearchParams({ ...(f as Record<string, string>), limit: String(limit), offset: String(offset) }).toString();
        const body = await get<TaskList>(`/market/tasks?${qs}`);
        const want = await pageTasks(sql, f, limit, offset);
        const got = { ids: body.tasks.map((t) => t.taskId), total: body.total, count: body.count };
        const expected = { ids: want.tasks.map((t) => t.taskId), total: want.total, count: want.tasks.length };
        if (JSON.stringify(got) !== JSON.stringify(expected)) mismatches.push(`${qs}: got ${JSON.stringify(got)} want ${JSON.stringify(expected)}`);
      }
    }
    return mismatches;
  };

  beforeAll(async () => {
    stack = await startLedgerStack('marketReads');
    const base = new URL(inject('databaseUrl'));
    base.pathname = `${base.pathname}_reads_${randomBytes(3).toString('hex')}`.slice(0, 64);
    dbUrl = base.toString();
    await ensureDatabase(dbUrl);
    await migrate(dbUrl);
    sql = createSql(dbUrl, { max: 6 });
    // the app first: its caches load the empty database, then follow the seed's NOTIFYs
    app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '1000000', MARKET_CLOSED_IN_MEMORY: '6' }, { sql, ledger: stack.ledger });
    await app.ready();
    await get('/market/tasks');
  });
  afterAll(async () => {
    await app?.close();
    await sql?.end();
    if (dbUrl) await dropDatabase(dbUrl).catch(() => {});
    await stack?.stop();
  });

  it('seeds once per size and refuses what looks like production', async () => {
    expect(await seedRefusal(sql, dbUrl, { NODE_ENV: 'development' })).toBeNull();
    const first = await seedDatabase(sql, SIZE);
    expect(first).toEqual({ passports: SIZE.agents, agents: SIZE.agents, tasks: SIZE.openTasks + SIZE.closedTasks });
    expect(await seedDatabase(sql, SIZE)).toEqual({ passports: 0, agents: 0, tasks: 0 });
    const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from tasks`;
    expect(n).toBe(SIZE.openTasks + SIZE.closedTasks);

    expect(await seedRefusal(sql, dbUrl, { NODE_ENV: 'production' })).toMatch(/NODE_ENV is production/);
    expect(await seedRefusal(sql, 'postgres://u@db.example.com:5432/x', { NODE_ENV: 'development' })).toMatch(/not on this machine/);
  });

  it('the directory, search and the task lists show the seeded rows (NOTIFY per batch)', async () => {
    const agents = await eventually(() => get<{ total: number }>('/agents?limit=5'), (b) => b.total === SIZE.agents);
    expect(agents.total).toBe(SIZE.agents);
    // the poster's marketplace record counts the seeded tasks it posted (market_records written with them, NOTIFY '*')
    const posterDid = seedDid(market[0]!);
    const [{ posted }] = await sql<{ posted: number }[]>`select count(*)::int as posted from tasks where poster_did = ${posterDid}`;
    expect(posted).toBeGreaterThan(0);
    const one = await eventually(
      () => get<{ did: string; name: string; marketplace?: { asPoster: { posted: number } } }>(`/agents/${encodeURIComponent(posterDid)}`),
      (b) => b.marketplace?.asPoster.posted === posted,
    );
    expect(one.name).toBe(seedAgentName(market[0]!));
    expect(one.marketplace?.asPoster.posted).toBe(posted);
    const found = await eventually(
      () => get<{ results: Array<{ type: string; did?: string }> }>(`/api/search?q=${seedAgentName(7)}&type=agent`),
      (b) => b.results.length === 1,
    );
    expect(found.results[0]).toMatchObject({ type: 'agent', did: seedDid(7) });
    const list = await eventually(() => get<TaskList>('/market/tasks?limit=100'), (b) => b.total === SIZE.openTasks + SIZE.closedTasks);
    expect(list.total).toBe(SIZE.openTasks + SIZE.closedTasks);
    // a list never carries a result before completion, whoever asks
    expect(list.tasks.filter((t) => t.status === 'delivered' && 'resultBody' in t)).toEqual([]);
    expect(await listsMatchPostgres()).toEqual([]);
  });

  it('stays exact while tasks close below and above the windows and the windows outgrow their bound', async () => {
    const now = new Date().toISOString();
    const close = async (t: TaskRecord, status: TaskStatus, seq: number) => upsertTask(sql, { ...t, status, updatedAt: now }, seq);
    // the oldest open tasks close: their ids lie below both closed windows' boundaries
    for (let j = SIZE.openTasks - 1; j >= SIZE.openTasks - 4; j--) {
      const { task } = seedTask('open', j, market);
      await close(task, j % 2 ? 'completed' : 'cancelled', 10);
    }
    // the newest open tasks close too (above the boundaries), more than twice the window: the window moves up
    for (let j = 0; j < 14; j++) {
      const { task } = seedTask('open', j, market);
      await close(task, j % 3 ? 'completed' : 'cancelled', 10);
    }
    const [{ open }] = await sql<{ open: number }[]>`select count(*)::int as open from tasks where status in ('posted', 'claimed', 'delivered')`;
    const openNow = await eventually(
      async () => {
        const [p, c, d] = await Promise.all(['posted', 'claimed', 'delivered'].map((s) => get<TaskList>(`/market/tasks?status=${s}&limit=1`)));
        return p!.total + c!.total + d!.total;
      },
      (n) => n === open,
    );
    expect(openNow).toBe(open);
    expect(await listsMatchPostgres()).toEqual([]);
  });
});
