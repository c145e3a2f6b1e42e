// The event log (issue 28): ids are in commit order, so a reader following a cursor never misses an
// event that commits after it read, even when writers' transactions overlap and commit out of the
// order they started in; a retried write adds nothing; NOTIFY events_appended names the audience.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createSql, type Sql } from '../../db/client.js';
import { CHANNELS, listenChanges } from '../../db/notify.js';
import { appendEvents, listEventsFor, parseEventsNotice } from '../../db/queries/events.js';
import type { NewEvent } from '../../domain/events.js';

describe('event log', () => {
  let sql: Sql;
  beforeAll(() => {
    sql = createSql(inject('databaseUrl'), { max: 12 });
  });
  afterAll(async () => {
    await sql?.end();
  });

  const event = (did: string, n: number, key: string = randomUUID()): NewEvent => ({ type: 'a2a.message_received', subject: `m${n}`, audience: [did], data: { n }, key });

  it('a reader following its cursor sees every event of overlapping writers, each once, in id order', { timeout: 120_000 }, async () => {
    const did = `did:test:${randomUUID()}`;
    const WRITERS = 40;
    let writing = true;
    const seen: string[] = [];
    // the reader: pages after its cursor while the writers run, then once more after they are done
    const reader = (async () => {
      let cursor: string | null = null;
      for (;;) {
        const done = !writing;
        const rows = await listEventsFor(sql, did, cursor, 100);
        for (const r of rows) seen.push(r.id);
        if (rows.length) cursor = rows.at(-1)!.id;
        if (done && rows.length === 0) return;
        await new Promise((r) => setTimeout(r, 2));
      }
    })();
    // writers in parallel, each pausing between its event and its commit
    const written = await Promise.all(
      Array.from({ length: WRITERS }, async (_, n) =>
        sql.begin(async (tx) => {
          const [id] = await appendEvents(tx, [event(did, n)]);
          // more work after the event before the commit: without the events lock a later id could commit first
          await tx`select pg_sleep(${((WRITERS - n) % 5) / 200})`;
          return id!;
        }),
      ),
    );
    writing = false;
    await reader;
    expect(new Set(seen).size).toBe(seen.length);
    expect([...seen].sort()).toEqual([...written].sort());
    expect(seen).toEqual([...seen].sort());
  });

  it('a retried write (same key) adds nothing; NOTIFY names the audience once it commits', async () => {
    const did = `did:test:${randomUUID()}`;
    const notices: string[] = [];
    const listener = await listenChanges(sql, CHANNELS.events, (p) => notices.push(p), () => {});
    try {
      const key = `retry:${randomUUID()}`;
      const first = await sql.begin((tx) => appendEvents(tx, [event(did, 1, key)]));
      const again = await sql.begin((tx) => appendEvents(tx, [event(did, 1, key)]));
      expect(first).toHaveLength(1);
      expect(again).toEqual([]);
      expect(await listEventsFor(sql, did, null, 10)).toHaveLength(1);
      for (let i = 0; i < 100 && !notices.some((p) => parseEventsNotice(p)?.a?.includes(did)); i++) await new Promise((r) => setTimeout(r, 20));
      const mine = notices.map(parseEventsNotice).filter((n) => n?.a?.includes(did));
      expect(mine).toEqual([{ i: first[0], a: [did] }]);
    } finally {
      await listener.close();
    }
  });
});
