/**
 * Marketplace records in memory (issue 19 item 7; domain/marketRecord.ts): the market_records
 * projection (one row per DID, summed from the tasks projection in the transaction of every task
 * write) held by a db/liveCache.ts cache, one per PostgreSQL pool, fed by NOTIFY
 * market_record_changed. The directory entries (GET /agents, /agents/{did}) and the agent cards
 * (GET /api/agent/{did}/card) read it synchronously, so those hot reads stay in memory.
 *
 * A DID with no row has an empty record (zeros). Records are immutable values of the cache (a change
 * replaces the object), so a serialised entry can be kept until its record object changes.
 */
import type { FastifyInstance } from 'fastify';
import type { Sql } from 'postgres';
import { shareLiveCache, type LiveCache } from '../../db/liveCache.js';
import { CHANNELS } from '../../db/notify.js';
import { findMarketRecord, listMarketRecords, marketRecordOf } from '../../db/queries/marketRecords.js';
import { emptyMarketRecord, marketRecordView, type MarketRecord, type MarketRecordView } from '../../domain/marketRecord.js';

interface CachedRecord {
  did: string;
  record: MarketRecord;
  view: MarketRecordView;
}

const EMPTY: CachedRecord = { did: '', record: emptyMarketRecord(), view: marketRecordView(undefined) };

export class MarketRecords {
  constructor(private readonly cache: LiveCache<CachedRecord>) {}

  /** Resolves once the first full load is done. */
  ready(timeoutMs?: number): Promise<void> {
    return this.cache.whenReady(timeoutMs);
  }

  /** The DID's record as answered; the same object until the record changes (an empty one when it has none). */
  viewOf(did: string): MarketRecordView {
    return (this.cache.get(did) ?? EMPTY).view;
  }
}

function cached(row: Parameters<typeof marketRecordOf>[0]): CachedRecord {
  const record = marketRecordOf(row);
  return { did: row.did, record, view: marketRecordView(record) };
}

/** The process's marketplace records over this pool, started on first use, released when the app closes. */
export function useMarketRecords(app: FastifyInstance, sql: Sql): MarketRecords {
  const { cache, release } = shareLiveCache<CachedRecord>(
    sql,
    {
      name: 'market_records',
      channel: CHANNELS.marketRecord,
      keyOf: (r) => r.did,
      loadAll: async (db) => (await listMarketRecords(db)).map(cached),
      loadKey: async (db, did) => {
        const row = await findMarketRecord(db, did);
        return row ? cached(row) : null;
      },
    },
    { onError: (err) => app.log.warn({ err }, 'marketplace records cache: load failed, retrying') },
  );
  app.addHook('onClose', release);
  return new MarketRecords(cache);
}
