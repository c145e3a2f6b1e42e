/**
 * The one quota mechanism (db/queries/quotas.ts, quota_counters; issue 21): fixed windows aligned to
 * the epoch, taken atomically by one upsert, by one place (a request) or by an amount (the operator-
 * paid A2A bytes). Against a real PostgreSQL database of its own (a take sweeps closed windows by the
 * clock it is given, so a clock in the future must not meet other files' counters).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { createSql, type Sql } from '../../db/client.js';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import { giveBackQuota, takeQuota } from '../../db/queries/quotas.js';

const DAY_MS = 86_400_000;

describe('quota_counters: places and amounts', () => {
  let sql: Sql;
  let dbUrl: string;

  beforeAll(async () => {
    const base = new URL(inject('databaseUrl'));
    base.pathname = `${base.pathname}_quotas_${randomBytes(3).toString('hex')}`.slice(0, 64);
    dbUrl = base.toString();
    await ensureDatabase(dbUrl);
    await migrate(dbUrl);
    sql = createSql(dbUrl, { max: 8 });
  });
  afterAll(async () => {
    await sql?.end();
    if (dbUrl) await dropDatabase(dbUrl).catch(() => undefined);
  });

  it('an amount is taken whole or not at all; a refusal reports what is left, and the window resets at UTC midnight', async () => {
    const q = { scope: 'test.bytes', subject: 'did:hedera:local:0.0.1001', max: 1_000, windowMs: DAY_MS };
    const noon = new Date('2031-09-01T12:00:00.000Z');
    expect(await takeQuota(sql, q, noon, 600)).toMatchObject({ ok: true, limit: 1_000, remaining: 400 });
    const refused = await takeQuota(sql, q, noon, 401);
    expect(refused).toMatchObject({ ok: false, remaining: 400 });
    expect(refused.resetAt.toISOString()).toBe('2031-09-02T00:00:00.000Z');
    // larger than the whole budget: refused at once, nothing counted
    expect(await takeQuota(sql, q, noon, 1_001)).toMatchObject({ ok: false, remaining: 400 });
    expect(await takeQuota(sql, q, noon, 400)).toMatchObject({ ok: true, remaining: 0 });
    expect(await takeQuota(sql, q, noon, 1)).toMatchObject({ ok: false, remaining: 0 });
    // the next UTC day is a fresh window
    expect(await takeQuota(sql, q, new Date('2031-09-02T00:00:00.500Z'), 1_000)).toMatchObject({ ok: true, remaining: 0 });
  });

  it('concurrent takes never exceed the budget', async () => {
    const q = { scope: 'test.bytes', subject: 'did:hedera:local:0.0.1002', max: 1_000, windowMs: DAY_MS };
    const at = new Date('2031-09-03T08:00:00.000Z');
    const takes = await Promise.all(Array.from({ length: 25 }, () => takeQuota(sql, q, at, 100)));
    expect(takes.filter((t) => t.ok)).toHaveLength(10);
    const [row] = await sql<{ count: number }[]>`select count from quota_counters where scope = ${q.scope} and subject = ${q.subject}`;
    expect(row!.count).toBe(1_000);
  });

  it('a take sweeps only windows closed by its clock and by the database clock: a caller moving the day never empties live counters', async () => {
    const live = { scope: 'test.live', subject: 'today', max: 5, windowMs: DAY_MS };
    expect(await takeQuota(sql, live, new Date())).toMatchObject({ ok: true, remaining: 4 });
    // 25 takes (more than the per-take sweep) by a clock five years ahead
    for (let i = 0; i < 25; i++) await takeQuota(sql, { scope: 'test.future', subject: `s${i}`, max: 1, windowMs: DAY_MS }, new Date(Date.now() + 5 * 365 * DAY_MS));
    expect(await takeQuota(sql, live, new Date())).toMatchObject({ ok: true, remaining: 3 });
  });

  it('one place per take as before: a quota of 0 refuses, a place given back can be taken again', async () => {
    const at = new Date('2031-09-04T08:00:00.000Z');
    expect(await takeQuota(sql, { scope: 'test.places', subject: 'none', max: 0, windowMs: DAY_MS }, at)).toMatchObject({ ok: false, remaining: 0 });
    const q = { scope: 'test.places', subject: 'two', max: 2, windowMs: DAY_MS };
    expect(await takeQuota(sql, q, at)).toMatchObject({ ok: true, remaining: 1 });
    expect(await takeQuota(sql, q, at)).toMatchObject({ ok: true, remaining: 0 });
    expect(await takeQuota(sql, q, at)).toMatchObject({ ok: false, remaining: 0 });
    await giveBackQuota(sql, q, at);
    expect(await takeQuota(sql, q, at)).toMatchObject({ ok: true, remaining: 0 });
  });
});
