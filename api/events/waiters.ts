/**
 * Pull of events (issue 28; DESIGN.md section 12 "Events out"): GET /agents/{did}/events?after=&wait=
 * answers at once when the DID has events after its cursor, otherwise it waits up to `wait` seconds
 * for one. Waiting costs no query: the process listens on NOTIFY events_appended (written in the
 * transaction of each event, db/queries/events.ts) and wakes only the waiters of the DIDs the
 * notice names, which then read PostgreSQL once. A notice too long to name its DIDs ({ all }) and
 * every (re)connect of the LISTEN connection (notices may have been lost) wake every waiter.
 * At most EVENTS_WAITERS_MAX requests wait per process; beyond, 503 with Retry-After.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from 'postgres';
import { listenChanges, CHANNELS, type ChangeListener } from '../../db/notify.js';
import { eventBody, listEventsFor, parseEventsNotice } from '../../db/queries/events.js';
import type { EventBody } from '../../domain/events.js';
import { ApiError } from '../errors.js';

/** Requests waiting at once in one API process. */
export const EVENTS_WAITERS_MAX = 1_000;

declare module 'fastify' {
  interface FastifyInstance {
    /** Pull of events with long-poll (api/events/waiters.ts). */
    events: EventWaiters;
  }
}

type Wake = () => void;

export class EventWaiters {
  private readonly byDid = new Map<string, Set<Wake>>();
  private count = 0;
  private listener: ChangeListener | null = null;
  private closed = false;

  constructor(private readonly sql: Sql) {}

  async start(onError: (err: unknown) => void): Promise<void> {
    this.listener = await listenChanges(
      this.sql,
      CHANNELS.events,
      (payload) => {
        const notice = parseEventsNotice(payload);
        if (!notice || notice.all) return this.wakeAll();
        for (const did of notice.a ?? []) this.wake(did);
      },
      // after a reconnect notices may have been lost: everyone looks again
      () => this.wakeAll(),
      { onError },
    );
  }

  /** Waiting requests now (for tests and metrics). */
  get waiting(): number {
    return this.count;
  }

  /**
   * The DID's events after `after`, waiting up to waitMs for the first when there is none yet.
   * `aborted` ends the wait early (the client went away). The waiter is registered before the first
   * read, so an event committed between the read and the wait still wakes it.
   */
  async pull(did: string, after: string | null, limit: number, waitMs: number, aborted?: AbortSignal): Promise<EventBody[]> {
    if (waitMs <= 0) return (await listEventsFor(this.sql, did, after, limit)).map(eventBody);
    if (this.count >= EVENTS_WAITERS_MAX || this.closed) {
      throw new ApiError('service_unavailable', 'Too many requests are waiting for events on this server', { hint: 'Retry after 5 seconds, or pull with wait=0' });
    }
    const deadline = Date.now() + waitMs;
    let woken = false;
    let release: Wake = () => {};
    const wake: Wake = () => {
      woken = true;
      release();
    };
    this.add(did, wake);
    const onAbort = () => wake();
    aborted?.addEventListener('abort', onAbort, { once: true });
    try {
      for (;;) {
        woken = false;
        const rows = await listEventsFor(this.sql, did, after, limit);
        const left = deadline - Date.now();
        if (rows.length > 0 || left <= 0 || aborted?.aborted || this.closed) return rows.map(eventBody);
        // woken while reading: read again at once
        if (woken) continue;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, left);
          release = () => {
            clearTimeout(timer);
            resolve();
          };
          if (woken) release();
        });
        release = () => {};
      }
    } finally {
      aborted?.removeEventListener('abort', onAbort);
      this.remove(did, wake);
    }
  }

  private add(did: string, wake: Wake) {
    let set = this.byDid.get(did);
    if (!set) this.byDid.set(did, (set = new Set()));
    set.add(wake);
    this.count++;
  }

  private remove(did: string, wake: Wake) {
    const set = this.byDid.get(did);
    if (!set?.delete(wake)) return;
    this.count--;
    if (set.size === 0) this.byDid.delete(did);
  }

  private wake(did: string) {
    for (const w of this.byDid.get(did) ?? []) w();
  }

  private wakeAll() {
    for (const set of this.byDid.values()) for (const w of set) w();
  }

  async close(): Promise<void> {
    this.closed = true;
    this.wakeAll();
    await this.listener?.close();
  }
}

/** Decorates the app with `events` (the waiters), listening from start-up and closed with the app. */
export default fp<{ sql: Sql }>(
  async (app: FastifyInstance, { sql }) => {
    const waiters = new EventWaiters(sql);
    await waiters.start((err) => app.log.warn({ err }, 'events listener'));
    app.decorate('events', waiters);
    // answer the waiting requests before the server closes (they would hold the close for up to 30 s)
    app.addHook('preClose', async () => {
      await waiters.close();
    });
  },
  { name: 'events' },
);
