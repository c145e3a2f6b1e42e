/**
 * A projection held in memory and kept current by PostgreSQL NOTIFY (DESIGN.md section 10,
 * "Caches across instances"). Readers are synchronous Map lookups; no TTL, no polling.
 *
 *  - on the first LISTEN and after every reconnect: full load (loadAll), so a lost connection never
 *    leaves the cache stale (notifications sent while it was down are lost);
 *  - on a notification: reload of that one key (loadKey; null = the row is gone); the payload
 *    RELOAD_ALL ('*', a rebuild or a bulk write) reloads everything on every channel;
 *  - reloads of one key never overlap, and a key notified during a full load is reloaded after it,
 *    so an older read never overwrites a newer one.
 *
 * How to use it (the writer side is db/notify.ts):
 *
 *   // 1. every write of the projection notifies, in its transaction (db/queries/<group>.ts)
 *   await sql.begin(async (tx) => {
 *     await tx`update agents set ... where did = ${did}`;
 *     await notifyChange(tx, CHANNELS.agent, did);
 *   });
 *
 *   // 2. one cache per process (per sql pool), started with the app, closed on app close
 *   //    (shareLiveCache below does the sharing and the closing for route groups)
 *   const agents = startLiveCache(sql, {
 *     name: 'agents',
 *     channel: CHANNELS.agent,
 *     keyOf: (a: AgentRow) => a.did,
 *     loadAll: (sql) => sql<AgentRow[]>`select * from agents`,
 *     loadKey: async (sql, did) => (await sql<AgentRow[]>`select * from agents where did = ${did}`)[0] ?? null,
 *     indexes: { byName: (a) => a.name.toLowerCase(), byCapability: (a) => a.capabilities },
 *   });
 *   app.addHook('onClose', () => agents.close());
 *
 *   // 3. readers
 *   await agents.whenReady();               // once per request: a no-op after the first load
 *   agents.get(did); agents.lookup('byName', 'weather-bot'); agents.values();
 *   agents.onChange((key) => derived.delete(key));   // drop anything derived from a value
 *
 * Keep loadAll to the rows readers need (e.g. active ones) if the table grows without bound.
 */
import type { Sql } from 'postgres';
import { listenChanges, RELOAD_ALL, type Channel, type ChangeListener } from './notify.js';

export interface LiveCacheSpec<V, I extends string> {
  /** for error messages */
  name: string;
  /** the NOTIFY channel whose payloads are this cache's keys */
  channel: Channel;
  /** primary key of a value; a notification payload names one */
  keyOf(value: V): string;
  /** every value (full load on (re)connect) */
  loadAll(sql: Sql): Promise<readonly V[]>;
  /** the current value of one key, null when it no longer belongs in the cache */
  loadKey(sql: Sql, key: string): Promise<V | null>;
  /** payload -> key (default: the payload itself); null ignores the notification (RELOAD_ALL never reaches it) */
  keyOfPayload?: (payload: string) => string | null;
  /**
   * Runs synchronously when a full load has replaced the values, before any change handler: for
   * state loaded alongside the rows (loadAll may remember it by the array it returns).
   */
  afterLoadAll?: (values: readonly V[]) => void;
  /** secondary indexes: name -> the index key(s) of a value */
  indexes?: Record<I, (value: V) => string | readonly string[] | null | undefined>;
}

export interface LiveCacheOptions {
  /** errors of loads (the cache retries by itself; log them) */
  onError?: (err: unknown) => void;
}

export type ChangeHandler<V> = (key: string, before: V | undefined, after: V | undefined) => void;

export class LiveCache<V, I extends string = never> {
  private values_ = new Map<string, V>();
  private indexes = new Map<I, Map<string, Set<string>>>();
  private readonly handlers = new Set<ChangeHandler<V>>();
  private readonly inflight = new Map<string, boolean>(); // key -> notified again while loading
  /** refresh() callers waiting for a load of the key that starts after their call */
  private readonly waiting = new Map<string, Array<() => void>>();
  private dirtyDuringFull: Set<string> | null = null;
  private fullRunning: Promise<void> | null = null;
  private fullAgain = false;
  private generation = 0;
  private retryTimer: NodeJS.Timeout | null = null;
  private retryAttempt = 0;
  private listener: ChangeListener | null = null;
  private closed = false;
  private readyResolve!: () => void;
  private readonly readyPromise: Promise<void>;
  /** true once the first full load has completed */
  isReady = false;
  /** incremented on every change (full load or key); derived data can remember the version it was built at */
  version = 0;

  constructor(
    private readonly sql: Sql,
    private readonly spec: LiveCacheSpec<V, I>,
    private readonly opts: LiveCacheOptions = {},
  ) {
    this.readyPromise = new Promise((r) => (this.readyResolve = r));
    for (const name of Object.keys(spec.indexes ?? {}) as I[]) this.indexes.set(name, new Map());
  }

  // ---------------------------------------------------------------- readers (synchronous)

  get(key: string): V | undefined {
    return this.values_.get(key);
  }

  /** Values whose index `index` contains `key`, in no particular order. */
  lookup(index: I, key: string): V[] {
    const keys = this.indexes.get(index)?.get(key);
    if (!keys) return [];
    const out: V[] = [];
    for (const k of keys) {
      const v = this.values_.get(k);
      if (v !== undefined) out.push(v);
    }
    return out;
  }

  values(): IterableIterator<V> {
    return this.values_.values();
  }

  get size(): number {
    return this.values_.size;
  }

  /** Resolves once the first full load is done (at once afterwards); rejects after timeoutMs. */
  whenReady(timeoutMs = 10_000): Promise<void> {
    if (this.isReady) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`cache ${this.spec.name} not loaded within ${timeoutMs} ms`)), timeoutMs);
      this.readyPromise.then(() => {
        clearTimeout(t);
        resolve();
      });
    });
  }

  /** Runs after every change of a key (also for each key a full load changed). Returns an unsubscribe. */
  onChange(handler: ChangeHandler<V>): () => void {
    this.handlers.add(handler);
    return () => this.handlers.delete(handler);
  }

  // ---------------------------------------------------------------- lifecycle

  async start(): Promise<void> {
    this.listener = await listenChanges(
      this.sql,
      this.spec.channel,
      (payload) => {
        if (payload === RELOAD_ALL) return void this.reloadAll();
        const key = this.spec.keyOfPayload ? this.spec.keyOfPayload(payload) : payload;
        if (key !== null) this.reloadKey(key);
      },
      () => this.reloadAll(),
      { onError: (err) => this.opts.onError?.(err) },
    );
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.listener?.close();
  }

  /** Full load (also run by the listener on every (re)connect). Concurrent calls coalesce. */
  reloadAll(): Promise<void> {
    if (this.fullRunning) {
      this.fullAgain = true;
      return this.fullRunning;
    }
    this.fullRunning = (async () => {
      do {
        this.fullAgain = false;
        this.dirtyDuringFull = new Set();
        this.generation++;
        try {
          const rows = await this.spec.loadAll(this.sql);
          if (this.closed) return;
          this.replaceAll(rows);
          this.retryAttempt = 0;
        } catch (err) {
          this.opts.onError?.(err);
          this.scheduleRetry();
        }
        const dirty = this.dirtyDuringFull;
        this.dirtyDuringFull = null;
        for (const key of dirty) this.reloadKey(key);
      } while (this.fullAgain && !this.closed);
    })().finally(() => {
      this.fullRunning = null;
    });
    return this.fullRunning;
  }

  /**
   * Reloads one key now and resolves once the cache holds what PostgreSQL held at the call (or
   * after timeoutMs). For read-your-writes in the process that made the change: its own
   * notification may arrive a moment after the request that waited for the change answered.
   */
  refresh(key: string, timeoutMs = 2_000): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(resolve, timeoutMs);
      t.unref();
      const list = this.waiting.get(key) ?? [];
      list.push(() => {
        clearTimeout(t);
        resolve();
      });
      this.waiting.set(key, list);
      if (this.inflight.has(key)) this.inflight.set(key, true); // the running load may predate the change
      else this.reloadKey(key);
    });
  }

  /**
   * Forgets a key its owner no longer holds (a bounded window moved past it), as if loadKey had
   * answered null; a later notification of the key asks loadKey again.
   */
  drop(key: string): void {
    if (this.values_.has(key)) this.apply(key, undefined);
  }

  /** Reloads one key (what a notification does). */
  reloadKey(key: string): void {
    if (this.closed) return;
    if (this.dirtyDuringFull) {
      this.dirtyDuringFull.add(key);
      return;
    }
    if (this.inflight.has(key)) {
      this.inflight.set(key, true);
      return;
    }
    this.inflight.set(key, false);
    const gen = this.generation;
    const waiters = this.waiting.get(key);
    this.waiting.delete(key);
    void (async () => {
      let stale = false;
      let failed = false;
      try {
        const value = await this.spec.loadKey(this.sql, key);
        if (this.closed) return;
        if (gen !== this.generation) stale = true; // a full load started meanwhile: read again after it
        else {
          this.apply(key, value ?? undefined);
          for (const w of waiters ?? []) w();
        }
      } catch (err) {
        this.opts.onError?.(err);
        failed = true;
      } finally {
        if ((stale || failed) && waiters) this.waiting.set(key, [...waiters, ...(this.waiting.get(key) ?? [])]);
        const again = this.inflight.get(key);
        this.inflight.delete(key);
        if (again || stale) this.reloadKey(key);
        else if (failed) setTimeout(() => this.reloadKey(key), 500).unref();
      }
    })();
  }

  private scheduleRetry() {
    if (this.closed || this.retryTimer) return;
    const delay = Math.min(5_000, 200 * 2 ** this.retryAttempt++);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = null;
      void this.reloadAll();
    }, delay);
    this.retryTimer.unref();
  }

  // ---------------------------------------------------------------- state changes

  private replaceAll(rows: readonly V[]) {
    const before = this.values_;
    const next = new Map<string, V>();
    for (const v of rows) next.set(this.spec.keyOf(v), v);
    this.values_ = next;
    for (const name of this.indexes.keys()) this.indexes.set(name, new Map());
    for (const [k, v] of next) this.indexAdd(k, v);
    this.version++;
    try {
      this.spec.afterLoadAll?.(rows);
    } catch (err) {
      this.opts.onError?.(err);
    }
    const wasReady = this.isReady;
    this.isReady = true;
    if (!wasReady) this.readyResolve();
    if (this.handlers.size === 0) return;
    for (const [k, v] of next) if (before.get(k) !== v) this.emit(k, before.get(k), v);
    for (const [k, v] of before) if (!next.has(k)) this.emit(k, v, undefined);
  }

  private apply(key: string, value: V | undefined) {
    const before = this.values_.get(key);
    if (before !== undefined) this.indexRemove(key, before);
    if (value === undefined) this.values_.delete(key);
    else {
      this.values_.set(key, value);
      this.indexAdd(key, value);
    }
    this.version++;
    this.emit(key, before, value);
  }

  private emit(key: string, before: V | undefined, after: V | undefined) {
    for (const h of this.handlers) {
      try {
        h(key, before, after);
      } catch (err) {
        this.opts.onError?.(err);
      }
    }
  }

  private indexKeys(name: I, value: V): readonly string[] {
    const k = this.spec.indexes![name](value);
    return k === null || k === undefined ? [] : typeof k === 'string' ? [k] : k;
  }

  private indexAdd(key: string, value: V) {
    for (const [name, index] of this.indexes) {
      for (const ik of this.indexKeys(name, value)) {
        let set = index.get(ik);
        if (!set) index.set(ik, (set = new Set()));
        set.add(key);
      }
    }
  }

  private indexRemove(key: string, value: V) {
    for (const [name, index] of this.indexes) {
      for (const ik of this.indexKeys(name, value)) {
        const set = index.get(ik);
        set?.delete(key);
        if (set?.size === 0) index.delete(ik);
      }
    }
  }
}

const SHARED = new WeakMap<Sql, Map<string, { cache: LiveCache<unknown, string>; users: number }>>();

/**
 * The process's cache named `spec.name` over this pool: started by the first caller, shared by the
 * later ones (one LISTEN, one copy of the rows however many route groups or apps read it), closed
 * when the last caller releases it. In a fastify plugin:
 *
 *   const { cache, release } = shareLiveCache(sql, spec, { onError: (err) => app.log.warn({ err }, '...') });
 *   app.addHook('onClose', release);
 */
export function shareLiveCache<V, I extends string = never>(
  sql: Sql,
  spec: LiveCacheSpec<V, I>,
  opts: LiveCacheOptions = {},
): { cache: LiveCache<V, I>; release: () => Promise<void> } {
  let byName = SHARED.get(sql);
  if (!byName) SHARED.set(sql, (byName = new Map()));
  let entry = byName.get(spec.name);
  if (!entry) {
    entry = { cache: startLiveCache(sql, spec, opts) as unknown as LiveCache<unknown, string>, users: 0 };
    byName.set(spec.name, entry);
  }
  entry.users++;
  const mine = entry;
  let released = false;
  return {
    cache: mine.cache as unknown as LiveCache<V, I>,
    async release() {
      if (released) return;
      released = true;
      if (--mine.users > 0) return;
      if (byName.get(spec.name) === mine) byName.delete(spec.name);
      await mine.cache.close();
    },
  };
}

/** The shared cache `name` over this pool, if one is running (for read-your-writes refreshes). */
export function sharedLiveCache<V, I extends string = never>(sql: Sql, name: string): LiveCache<V, I> | undefined {
  return SHARED.get(sql)?.get(name)?.cache as unknown as LiveCache<V, I> | undefined;
}

/**
 * Creates a cache and starts listening; the first full load runs in the background (readers await
 * `whenReady()`), so a process whose PostgreSQL is not up yet still starts, and the cache fills
 * when the LISTEN connection comes up.
 */
export function startLiveCache<V, I extends string = never>(sql: Sql, spec: LiveCacheSpec<V, I>, opts: LiveCacheOptions = {}): LiveCache<V, I> {
  const cache = new LiveCache<V, I>(sql, spec, opts);
  cache.start().catch((err) => opts.onError?.(err));
  return cache;
}
