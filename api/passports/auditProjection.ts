/**
 * The catch-up reader of the audit topic's projection (db/migrations/0005_audit_events.ts): reads
 * the topic through the mirror after the stored cursor and upserts what it finds, so the topic
 * stays the record. The publishing activity already wrote each event it published (without its
 * consensus timestamp); this fills those in, adds messages published by anything else, and
 * rebuilds the projection from the topic when the table (and its cursor) were emptied.
 * One reader at a time per topic (a transaction-scoped advisory try-lock); others skip.
 *
 * GET /audit/{tokenId}/{serial} reads pages through auditPages: the reader runs in the background
 * when the app starts and at most every CATCH_UP_EVERY_MS while requests come in; only a page
 * holding an event the reader has not seen yet (no consensus timestamp) waits for one catch-up
 * (at most CATCH_UP_WAIT_MS); if the mirror does not answer, the page is served as the projection has it.
 */
import type { FastifyInstance } from 'fastify';
import type { Sql } from 'postgres';
import type { MirrorClient } from '../../ledger/mirror.js';
import { parseAuditMessage } from '../../domain/auditEvents.js';
import { auditCursor, listAuditEvents, recordAuditEvents, setAuditCursor, type ProjectedAuditEvent } from '../../db/queries/auditEvents.js';

/** Projects the topic's messages after the cursor; returns how many events were projected (0 when another reader holds the lock). */
export async function catchUpAuditTopic(sql: Sql, mirror: MirrorClient, topicId: string): Promise<number> {
  return sql.begin(async (tx) => {
    const [row] = await tx<{ locked: boolean }[]>`select pg_try_advisory_xact_lock(hashtext(${`audit-projection:${topicId}`})) as locked`;
    if (!row?.locked) return 0;
    const after = await auditCursor(tx, topicId);
    const { messages, nextAfterSequence } = await mirror.getJoinedTopicMessages(topicId, { afterSequence: after });
    const events: ProjectedAuditEvent[] = [];
    for (const msg of messages) {
      const event = parseAuditMessage(msg.text(), { sequenceNumber: msg.sequenceNumber, consensusTimestamp: msg.consensusTimestamp });
      if (event) events.push({ sequenceNumber: msg.sequenceNumber, consensusTimestamp: msg.consensusTimestamp, event });
    }
    await recordAuditEvents(tx, topicId, events);
    if (nextAfterSequence > after) await setAuditCursor(tx, topicId, nextAfterSequence);
    return events.length;
  }) as Promise<number>;
}

/** Least time between two background catch-ups of one process. */
export const CATCH_UP_EVERY_MS = 10_000;
/** Longest a request waits for a catch-up that completes its page. */
const CATCH_UP_WAIT_MS = 3_000;

/** The audit pages of one app over one topic, with the catch-up reader run as the file comment says (stopped with the app). */
export function auditPages(app: FastifyInstance, sql: Sql, mirror: MirrorClient, topicId: string) {
  let running: Promise<unknown> | null = null;
  let lastRun = 0;
  let closed = false;

  const catchUp = (): Promise<unknown> => {
    if (closed) return Promise.resolve();
    running ??= catchUpAuditTopic(sql, mirror, topicId)
      .catch((err) => app.log.warn({ err }, 'audit projection: catch-up failed'))
      .finally(() => {
        running = null;
      });
    lastRun = Date.now();
    return running;
  };
  app.addHook('onReady', async () => {
    void catchUp();
  });
  app.addHook('onClose', async () => {
    closed = true;
    await running;
  });

  /** One page of a passport's events, in topic order. */
  async function page(q: { tokenId: string; serial: number; limit: number; offset: number }) {
    const read = () => listAuditEvents(sql, { topicId, ...q });
    let page = await read();
    if (page.events.some((e) => !e.consensusTimestamp)) {
      const done = await Promise.race([catchUp().then(() => true), new Promise<boolean>((r) => setTimeout(r, CATCH_UP_WAIT_MS, false).unref())]);
      if (done) page = await read();
    } else if (Date.now() - lastRun > CATCH_UP_EVERY_MS) {
      void catchUp();
    }
    return page;
  }

  return { page };
}
