/**
 * Issue 13 follow-up, "task reads lag after an API restart": a freshly started API instance (its own
 * pool, so its own LISTEN connection and NOTIFY-fed caches, like a process restarted after SIGKILL)
 * built while a writer updates the tasks projection in a tight loop (each write NOTIFYs in its
 * transaction, as the worker's projectTask activity does) serves the latest written state over HTTP
 * within 1 s of the write, at every restart moment tried. This is the window a cache loses
 * notifications in when it loads its snapshot before its LISTEN stands, or misses a reload.
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import postgres from 'postgres';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { upsertTask } from '../../db/queries/marketTasks.js';
import type { TaskRecord } from '../../domain/market.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { seedTask } from '../support/seedDirectory.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a restarted API instance serves the latest task state (NOTIFY-fed task book)', () => {
  let sql: Sql;
  let stack: LedgerStack;
  let task: TaskRecord;
  /** the last version committed by the writer (description `v<n>`) */
  let committed = 0;
  let writing = false;
  let writer: Promise<void> | null = null;

  const startWriter = () => {
    writing = true;
    writer = (async () => {
      while (writing) {
        const n = committed + 1;
        await upsertTask(sql, { ...task, description: `v${n}`, updatedAt: new Date().toISOString() }, 1 + n);
        committed = n;
      }
    })();
  };
  const stopWriter = async () => {
    writing = false;
    await writer;
  };

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 4 });
    stack = await startLedgerStack('restartlag');
    task = await seedTask(sql, { title: 'restart lag', description: 'v0', seq: 1 });
  });
  afterAll(async () => {
    await stopWriter();
    await stack?.stop();
    await sql?.end();
  });

  /** A fresh instance: its own pool and ledger context (so its own task book and LISTEN connection). */
  async function freshInstance(): Promise<{ app: FastifyInstance; pool: Sql; base: string }> {
    const pool = postgres({ ...sql.options, max: 3 } as never) as unknown as Sql;
    const app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '1000000' }, { sql: pool, ledger: { ...stack.ledger } });
    await app.listen({ port: 0, host: '127.0.0.1' });
    return { app, pool, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` };
  }

  const versionOn = async (base: string): Promise<number> => {
    const res = await fetch(`${base}/market/tasks/${task.taskId}`);
    const body = (await res.json()) as { description?: string };
    expect(res.status, JSON.stringify(body)).toBe(200);
    return Number(/^v(\d+)$/.exec(body.description ?? '')?.[1] ?? -1);
  };

  /** Polls until the instance serves at least version `want`; the time it took (ms), or null after 1 s. */
  const catchUp = async (base: string, want: number): Promise<number | null> => {
    const t0 = Date.now();
    while (Date.now() - t0 < 1_000) {
      if ((await versionOn(base)) >= want) return Date.now() - t0;
      await sleep(10);
    }
    return null;
  };

  it('restarted 16 times, each during a burst of writes that ends at a different moment of its start: each serves the last write within 1 s', async () => {
    const lags: string[] = [];
    for (let round = 0; round < 16; round++) {
      const inst = await freshInstance();
      try {
        // the first read starts the task book (LISTEN + full load) while the burst goes on; the burst
        // ends at a different moment of that start each round, and no later write comes to help
        startWriter();
        const first = versionOn(inst.base);
        await sleep((round * 7) % 80);
        await stopWriter();
        await first;
        const want = committed;
        const took = await catchUp(inst.base, want);
        if (took === null) lags.push(`round ${round}: v${want} not served within 1 s (serves v${await versionOn(inst.base)})`);
      } finally {
        await inst.app.close();
        await inst.pool.end();
      }
    }
    expect(lags).toEqual([]);
    expect(committed).toBeGreaterThan(16); // the writer really wrote during the starts
  });

  it('restarted 8 times during a continuous write loop, each instance keeps up with it (within 1 s)', async () => {
    startWriter();
    const lags: string[] = [];
    try {
      for (let round = 0; round < 8; round++) {
        await sleep((round * 37) % 120);
        const inst = await freshInstance();
        try {
          await versionOn(inst.base);
          for (let probe = 0; probe < 3; probe++) {
            const want = committed;
            if ((await catchUp(inst.base, want)) === null) lags.push(`round ${round} probe ${probe}: v${want} not served within 1 s`);
            await sleep(50);
          }
        } finally {
          await inst.app.close();
          await inst.pool.end();
        }
      }
    } finally {
      await stopWriter();
    }
    expect(lags).toEqual([]);
  });

  it('an instance started after the last write serves it at once, and one started before follows it', async () => {
    const before = await freshInstance();
    try {
      await versionOn(before.base);
      const want = committed + 1;
      await upsertTask(sql, { ...task, description: `v${want}`, updatedAt: new Date().toISOString() }, 1 + want);
      committed = want;
      expect(await catchUp(before.base, want)).not.toBeNull();
      const after = await freshInstance();
      try {
        expect(await versionOn(after.base)).toBe(want);
      } finally {
        await after.app.close();
        await after.pool.end();
      }
    } finally {
      await before.app.close();
      await before.pool.end();
    }
  });
});
