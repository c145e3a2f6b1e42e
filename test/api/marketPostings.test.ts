// The marketplace posting caps against PostgreSQL (db/queries/taskPostings.ts, issue 20 item 2): a
// posting counts as pending until its task row is projected, then as an open task. Found by the abuse
// flood (test/reliability/abuseFlood.test.ts: 3 unfunded tasks admitted under a cap of 2): a task row
// projected between the count of open tasks and the count of pending postings was counted in neither,
// and let a posting past the cap. Here the projection is made to land exactly there.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { createSql, type Sql } from '../../db/client.js';
import { reservePosting } from '../../db/queries/marketPostings.js';
import { upsertTask } from '../../db/queries/marketTasks.js';
import { postedTask } from '../../domain/market.js';

const limits = { unfundedMax: 1, dailyMax: 100, fundingWindowMs: 86_400_000 };

describe('posting caps (PostgreSQL)', () => {
  let sql: Sql;
  beforeAll(() => {
    sql = createSql(inject('databaseUrl'), { max: 4 });
  });
  afterAll(async () => {
    await sql?.end();
  });

  const taskOf = (taskId: string, posterDid: string) =>
    postedTask(
      { taskId, title: 'cap', description: '', priceHbar: 1, priceTinybars: '100000000', capabilities: [], posterDid, verifierType: 'none', verifierConfig: null, deadline: null, feeBps: 0, escrow: false },
      new Date().toISOString(),
    );

  /** `sql` whose transactions run `afterTasksRead` right after their first statement that reads the tasks table. */
  function withProjectionAfterTasksRead(afterTasksRead: () => Promise<void>): Sql {
    let done = false;
    const wrap = (tx: Sql): Sql =>
      new Proxy(tx, {
        apply(target, thisArg, args: unknown[]) {
          const q = Reflect.apply(target as never, thisArg, args) as Promise<unknown>;
          const text = Array.isArray(args[0]) ? (args[0] as string[]).join('?') : '';
          if (done || !/from tasks t\b/.test(text)) return q;
          done = true;
          return Promise.resolve(q).then(async (rows) => {
            await afterTasksRead();
            return rows;
          });
        },
      });
    return { begin: (fn: (tx: Sql) => Promise<unknown>) => sql.begin((tx) => fn(wrap(tx as unknown as Sql))) } as unknown as Sql;
  }

  it('a posting whose task is projected while the next posting is being counted still counts: the cap holds', async () => {
    const posterDid = `did:hedera:local:0.0.${700_000 + Math.floor(Math.random() * 99_999)}`;
    const first = uuidv7();
    expect(await reservePosting(sql, { taskId: first, posterDid, now: new Date(), limits })).toEqual({ ok: true });
    // the first posting's task row lands right after the next posting read the open tasks
    const racing = withProjectionAfterTasksRead(async () => {
      expect(await upsertTask(sql, taskOf(first, posterDid), 1)).toBe(true);
    });
    const second = await reservePosting(racing, { taskId: uuidv7(), posterDid, now: new Date(), limits });
    expect(second).toMatchObject({ ok: false, refused: 'unfunded', open: 1 });
    // and once projected, it is counted as an open task
    expect(await reservePosting(sql, { taskId: uuidv7(), posterDid, now: new Date(), limits })).toMatchObject({ ok: false, refused: 'unfunded', open: 1 });
  });
});
