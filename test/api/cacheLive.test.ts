/**
 * The NOTIFY-fed memory cache (db/liveCache.ts, db/notify.ts) against real PostgreSQL: a change
 * committed by another pool reaches the cache, a rolled-back one does not, and a killed LISTEN
 * connection leads to a full reload (changes made while it was down included).
 */
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createSql, type Sql } from '../../db/client.js';
import { startLiveCache, type LiveCache } from '../../db/liveCache.js';
import { CHANNELS, listenerBackendPid, notifyChange } from '../../db/notify.js';

interface Row {
  id: string;
  owner: string;
  label: string;
}

/** Polls until check() holds or the deadline passes (asserts the outcome, not the time). */
async function eventually(check: () => boolean, deadlineMs = 10_000): Promise<void> {
  const until = Date.now() + deadlineMs;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not reached before the deadline');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('live cache over LISTEN/NOTIFY', () => {
  let writer: Sql;
  let reader: Sql;
  let cache: LiveCache<Row, 'byOwner'>;
  const table = `cache_test_${process.pid}`;
  // the test reuses the task channel with its own payload prefix: no other test file listens to it here
  const prefix = `t${process.pid}:`;

  const write = async (id: string, owner: string | null, label = 'x') => {
    await writer.begin(async (tx) => {
      if (owner === null) await tx`delete from ${tx(table)} where id = ${id}`;
      else await tx`insert into ${tx(table)} (id, owner, label) values (${id}, ${owner}, ${label}) on conflict (id) do update set owner = excluded.owner, label = excluded.label`;
      await notifyChange(tx, CHANNELS.task, prefix + id);
    });
  };

  beforeAll(async () => {
    writer = createSql(inject('databaseUrl'), { max: 2 });
    reader = createSql(inject('databaseUrl'), { max: 2 });
    await writer`create table ${writer(table)} (id text primary key, owner text not null, label text not null)`;
    await writer`insert into ${writer(table)} values ('a', 'alice', 'one'), ('b', 'bob', 'two')`;
    cache = startLiveCache<Row, 'byOwner'>(reader, {
      name: 'test',
      channel: CHANNELS.task,
      keyOf: (r) => r.id,
      keyOfPayload: (p) => (p.startsWith(prefix) ? p.slice(prefix.length) : null),
      loadAll: (sql) => sql<Row[]>`select * from ${sql(table)}`,
      loadKey: async (sql, id) => (await sql<Row[]>`select * from ${sql(table)} where id = ${id}`)[0] ?? null,
      indexes: { byOwner: (r) => r.owner },
    });
    await cache.whenReady();
  });
  afterAll(async () => {
    await cache?.close();
    if (writer) await writer`drop table if exists ${writer(table)}`.catch(() => {});
    await writer?.end();
    await reader?.end();
  });

  it('serves the full load synchronously, with secondary indexes', () => {
    expect(cache.get('a')).toMatchObject({ owner: 'alice', label: 'one' });
    expect(cache.lookup('byOwner', 'bob').map((r) => r.id)).toEqual(['b']);
    expect(cache.get('zz')).toBeUndefined();
  });

  it('applies committed inserts, updates and deletes of another pool; the index follows', async () => {
    const changed: string[] = [];
    const off = cache.onChange((key) => changed.push(key));
    await write('c', 'carol', 'three');
    await eventually(() => cache.get('c')?.label === 'three');
    await write('a', 'bob', 'moved');
    await eventually(() => cache.get('a')?.owner === 'bob');
    expect(cache.lookup('byOwner', 'alice')).toEqual([]);
    expect(cache.lookup('byOwner', 'bob').map((r) => r.id).sort()).toEqual(['a', 'b']);
    await write('b', null);
    await eventually(() => cache.get('b') === undefined);
    expect(cache.lookup('byOwner', 'bob').map((r) => r.id)).toEqual(['a']);
    off();
    expect(changed).toEqual(['c', 'a', 'b']);
  });

  it('a rolled-back change is never announced', async () => {
    await expect(
      writer.begin(async (tx) => {
        await tx`insert into ${tx(table)} values ('r', 'rollo', 'never')`;
        await notifyChange(tx, CHANNELS.task, `${prefix}r`);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    // a later committed change arrives; the rolled-back row never did
    await write('d', 'dave');
    await eventually(() => cache.get('d') !== undefined);
    expect(cache.get('r')).toBeUndefined();
  });

  it('after the LISTEN connection is killed it reloads, picking up changes made while it was down, and keeps following', async () => {
    const pid = await listenerBackendPid(reader);
    expect(pid).toBeTypeOf('number');
    const versionBefore = cache.version;
    // a change written without a notification: only a full reload can see it
    await writer`update ${writer(table)} set label = 'silent' where id = 'c'`;
    const [{ killed }] = await writer<{ killed: boolean }[]>`select pg_terminate_backend(${pid}) as killed`;
    expect(killed).toBe(true);
    await eventually(() => cache.get('c')?.label === 'silent');
    expect(cache.version).toBeGreaterThan(versionBefore);
    const newPid = await listenerBackendPid(reader);
    expect(newPid).not.toBe(pid);
    await write('e', 'erin', 'after');
    await eventually(() => cache.get('e')?.label === 'after');
  });
});
