/**
 * Change announcements between processes over PostgreSQL LISTEN/NOTIFY (DESIGN.md section 10,
 * "Caches across instances").
 *
 * Writer side: every projection write a cache depends on calls `notifyChange(tx, CHANNELS.x, id)`
 * inside ITS OWN transaction, so the notification is delivered exactly when (and only if) the
 * change commits. Payloads are ids only (NOTIFY payloads are capped at 8000 bytes; readers reload
 * the row from PostgreSQL, so a payload never carries state that could be stale or secret).
 *
 *   await sql.begin(async (tx) => {
 *     await tx`update passports set revoked_at = now() where ...`;
 *     await notifyChange(tx, CHANNELS.passport, passportKey(tokenId, serial));
 *   });
 *
 * Reader side: `listenChanges(sql, channel, onNotify, onListen)` over the `postgres` package's
 * sql.listen. `onListen` runs after every (re)connect of the LISTEN connection: a process that lost
 * the connection may have missed notifications, so it must reload everything there. db/liveCache.ts
 * does this for you; use it rather than this file directly unless you need raw notifications.
 */
import postgres, { type Sql, type TransactionSql } from 'postgres';

/** Channel names. One per projection a cache follows; the payload format is given beside each. */
export const CHANNELS = {
  /** payload `${tokenId}/${serial}` (passportKey): passport issued, upgraded or revoked */
  passport: 'passport_changed',
  /** payload the agent's DID: agent registered, updated or deactivated */
  agent: 'agent_changed',
  /** payload the task id: task created or changed */
  task: 'task_changed',
  /** payload a DID: its marketplace record (market_records, written with the task that moved it) changed */
  marketRecord: 'market_record_changed',
  /** payload the indexer source name: chain events written or rewound (GET /events' cache) */
  chainEvents: 'chain_events_changed',
  /** payload the audit topic id: audit events projected */
  audit: 'audit_changed',
  /** payload the registry key id (uuid): key registered, revoked or its directory record written (trigger of migration 0012) */
  registryKey: 'registry_key_changed',
  /** payload JSON { i: last event id, a: audience DIDs, c: broadcast capabilities } or { i, all: true } when longer (db/queries/events.ts) */
  events: 'events_appended',
  /** payload the webhook subscription id: created, deleted or disabled (db/queries/webhooks.ts) */
  webhook: 'webhook_changed',
} as const;

export type Channel = (typeof CHANNELS)[keyof typeof CHANNELS];

/** The largest payload accepted here (PostgreSQL's hard limit is 8000 bytes; ids are far shorter). */
const MAX_PAYLOAD = 512;

/**
 * Announces a change on `channel`, delivered to listeners when the caller's transaction commits
 * (NOTIFY is transactional; identical notifications in one transaction are folded into one).
 * Pass the transaction (`tx` of sql.begin), or plain `sql` for a single autocommitted statement.
 */
export async function notifyChange(tx: Sql | TransactionSql, channel: Channel, payload: string): Promise<void> {
  if (payload.length > MAX_PAYLOAD) throw new Error(`notify payload on ${channel} too long (${payload.length} chars): send ids only`);
  await tx`select pg_notify(${channel}, ${payload})`;
}

export interface ChangeListener {
  /** Stops listening (idempotent). */
  close(): Promise<void>;
}

export interface ListenOptions {
  /** Called with errors of onListen and of (re)subscribing (default: ignored; it retries by itself). */
  onError?: (err: unknown) => void;
  /**
   * Called when the LISTEN connection is lost: notifications may be missed until onListen runs
   * again. A cache that must never serve what it cannot vouch for stops serving here.
   */
  onLost?: () => void;
}

interface Subscriber {
  onNotify: (payload: string) => void;
  onListen: () => void | Promise<void>;
  onError: (err: unknown) => void;
  onLost?: () => void;
}

/**
 * One LISTEN connection per pool, shared by every listener of the process. It is a dedicated
 * connection (the pool's options, max 1, never idled out) like the `postgres` package's own
 * sql.listen, but re-subscribes itself with a back-off until it succeeds: sql.listen gives up
 * silently when its re-LISTEN after a dropped connection fails, which would leave a cache stale
 * for good. After every successful (re)subscribe each listener's onListen runs.
 */
class NotificationHub {
  private readonly subs = new Map<string, Set<Subscriber>>();
  private readonly conn: Sql;
  private connected = false;
  private subscribing: Promise<void> | null = null;
  private retryTimer: NodeJS.Timeout | null = null;
  private attempt = 0;
  private closed = false;

  constructor(sql: Sql) {
    this.conn = postgres({
      ...sql.options,
      max: 1,
      idle_timeout: null,
      max_lifetime: null,
      fetch_types: false,
      onnotify: (channel: string, payload: string) => {
        for (const s of this.subs.get(channel) ?? []) {
          try {
            s.onNotify(payload);
          } catch (err) {
            s.onError(err);
          }
        }
      },
      onclose: () => {
        this.connected = false;
        if (!this.closed) for (const set of this.subs.values()) for (const s of set) s.onLost?.();
        this.scheduleResubscribe(0);
      },
    } as unknown as postgres.Options<Record<string, never>>);
  }

  async add(channel: string, sub: Subscriber): Promise<void> {
    let set = this.subs.get(channel);
    const fresh = !set;
    if (!set) this.subs.set(channel, (set = new Set()));
    set.add(sub);
    if (!this.connected) {
      // resubscribe runs every onListen, this one's included; on failure it retries by itself
      await this.resubscribe().catch(() => {});
      return;
    }
    if (fresh) {
      try {
        await this.conn`listen ${this.conn(channel)}`;
      } catch (err) {
        sub.onError(err);
        this.connected = false;
        this.scheduleResubscribe(500);
        return;
      }
    }
    runOnListen(sub);
  }

  async remove(channel: string, sub: Subscriber): Promise<void> {
    const set = this.subs.get(channel);
    if (!set?.delete(sub) || set.size > 0) return;
    this.subs.delete(channel);
    if (this.connected) await this.conn`unlisten ${this.conn(channel)}`.catch(() => {});
    if (this.subs.size === 0) await this.close();
  }

  private resubscribe(): Promise<void> {
    this.subscribing ??= (async () => {
      try {
        for (const channel of this.subs.keys()) await this.conn`listen ${this.conn(channel)}`;
        this.connected = true;
        this.attempt = 0;
        for (const set of this.subs.values()) for (const s of set) runOnListen(s);
      } catch (err) {
        for (const set of this.subs.values()) for (const s of set) s.onError(err);
        this.scheduleResubscribe(Math.min(5_000, 100 * 2 ** this.attempt++));
        throw err;
      } finally {
        this.subscribing = null;
      }
    })();
    return this.subscribing;
  }

  private scheduleResubscribe(delayMs: number) {
    if (this.closed || this.retryTimer || this.subs.size === 0) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      this.resubscribe().catch(() => {});
    }, delayMs);
    this.retryTimer.unref();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    HUBS.delete(this.owner);
    await this.conn.end({ timeout: 1 }).catch(() => {});
  }

  owner!: Sql;

  async backendPid(): Promise<number> {
    const [row] = await this.conn<{ pid: number }[]>`select pg_backend_pid() as pid`;
    return row!.pid;
  }
}

function runOnListen(s: Subscriber) {
  Promise.resolve()
    .then(s.onListen)
    .catch(s.onError);
}

const HUBS = new WeakMap<Sql, NotificationHub>();

function hubFor(sql: Sql): NotificationHub {
  let hub = HUBS.get(sql);
  if (!hub) {
    hub = new NotificationHub(sql);
    hub.owner = sql;
    HUBS.set(sql, hub);
  }
  return hub;
}

/**
 * Listens on one channel. `onNotify(payload)` runs for every notification; `onListen()` runs after
 * the first LISTEN and after every reconnect (reload the cache there: notifications sent while the
 * connection was down are lost). Resolves once the first LISTEN was tried; when it failed (onError
 * is told) it keeps retrying in the background and onListen runs when it succeeds.
 */
export async function listenChanges(
  sql: Sql,
  channel: Channel,
  onNotify: (payload: string) => void,
  onListen: () => void | Promise<void>,
  opts: ListenOptions = {},
): Promise<ChangeListener> {
  const hub = hubFor(sql);
  const sub: Subscriber = { onNotify, onListen, onError: opts.onError ?? (() => {}), ...(opts.onLost ? { onLost: opts.onLost } : {}) };
  let closed = false;
  const handle: ChangeListener = {
    async close() {
      if (closed) return;
      closed = true;
      await hub.remove(channel, sub);
    },
  };
  await hub.add(channel, sub);
  return handle;
}

/** Test hook: the backend pid of the process's LISTEN connection (to kill it with pg_terminate_backend). */
export async function listenerBackendPid(sql: Sql): Promise<number | null> {
  const hub = HUBS.get(sql);
  if (!hub) return null;
  return hub.backendPid();
}

/**
 * The payload that tells every listener of a channel to reload everything (a rebuild, or a bulk
 * write such as `npm run seed`'s batches: one notification per batch instead of one per row).
 * db/liveCache.ts caches understand it on every channel.
 */
export const RELOAD_ALL = '*';
