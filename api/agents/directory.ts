/**
 * The directory as each API process holds it in memory (DESIGN.md section 10, "Caches across
 * instances"): a db/liveCache of the registered rows (full load on start and on every reconnect of
 * the LISTEN connection, one row reloaded per NOTIFY agent_changed), and the DirectoryIndex of
 * domain/directory.ts that answers filtered pages. A NOTIFY with payload '*' (a rebuild, a seed
 * batch) reloads everything (db/liveCache.ts does so for every cache). The index follows the cache's changes one by one; after a burst of changes (a full
 * load) it is rebuilt from the cache in one pass on the next read.
 */
import type { FastifyInstance } from 'fastify';
import type { Sql } from 'postgres';
import { startLiveCache, type LiveCache } from '../../db/liveCache.js';
import { CHANNELS } from '../../db/notify.js';
import { agentEntryOf, type AgentRow } from '../../db/queries/agents.js';
import { DirectoryIndex, type AgentEntry, type DirectoryQuery } from '../../domain/directory.js';

interface CachedAgent {
  entry: AgentEntry;
  sequence: number;
}

/** Changes applied one by one; more than this since the last read rebuilds the index instead. */
const INCREMENTAL_MAX = 64;

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's directory in memory (api/agents/directory.ts): GET /agents, search and the feed read it. */
    agentDirectory: AgentDirectory;
  }
}

/** Gives the app its directory (the `agentDirectory` decorator), loading at once and closed with the app. */
export function installAgentDirectory(app: FastifyInstance, sql: Sql): AgentDirectory {
  const directory = new AgentDirectory(sql, (err) => app.log.warn({ err }, 'agent directory cache'));
  app.decorate('agentDirectory', directory);
  app.addHook('onClose', async () => {
    await directory.close();
  });
  return directory;
}

export class AgentDirectory {
  private readonly cache: LiveCache<CachedAgent>;
  private readonly index = new DirectoryIndex();
  private pending = new Set<string>();
  private rebuildIndex = true;

  constructor(sql: Sql, onError: (err: unknown) => void) {
    const cache = startLiveCache<CachedAgent>(
      sql,
      {
        name: 'agents',
        channel: CHANNELS.agent,
        keyOf: (a) => a.entry.did,
        loadAll: async (db) => (await db<AgentRow[]>`select * from agents where status = 'registered'`).map(agentEntryOf),
        loadKey: async (db, did) => {
          const [row] = await db<AgentRow[]>`select * from agents where did = ${did} and status = 'registered'`;
          return row ? agentEntryOf(row) : null;
        },
      },
      { onError },
    );
    this.cache = cache;
    cache.onChange((did) => {
      if (this.rebuildIndex) return;
      this.pending.add(did);
      if (this.pending.size > INCREMENTAL_MAX) this.rebuildIndex = true;
    });
  }

  /** Resolves once the first full load is done. */
  ready(timeoutMs?: number): Promise<void> {
    return this.cache.whenReady(timeoutMs);
  }

  private current(): DirectoryIndex {
    if (this.rebuildIndex) {
      this.rebuildIndex = false;
      this.pending = new Set();
      this.index.replaceAll([...this.cache.values()]);
    } else if (this.pending.size > 0) {
      const keys = this.pending;
      this.pending = new Set();
      for (const did of keys) {
        const v = this.cache.get(did);
        if (v) this.index.upsert(v.entry, v.sequence);
        else this.index.remove(did);
      }
    }
    return this.index;
  }

  get(did: string): AgentEntry | undefined {
    return this.cache.get(did)?.entry;
  }

  query(q: DirectoryQuery): { agents: AgentEntry[]; total: number } {
    return this.current().query(q);
  }

  get size(): number {
    return this.cache.size;
  }

  /** Moves on every change of the cache (GET /api/search rebuilds its index when it moved). */
  get version(): number {
    return this.cache.version;
  }

  /** Every registered entry with its directory sequence, in no particular order. */
  values(): IterableIterator<{ entry: AgentEntry; sequence: number }> {
    return this.cache.values();
  }

  close(): Promise<void> {
    return this.cache.close();
  }
}
