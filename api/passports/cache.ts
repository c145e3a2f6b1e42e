/**
 * Passports in memory (DESIGN.md section 10, "Caches across instances"): the passports projection
 * held by a db/liveCache.ts cache, one per PostgreSQL pool (so per API process), fed by the
 * 'passport_changed' NOTIFY that db/queries/passports.ts sends in the transaction of every issue,
 * upgrade and revoke. GET /passport/..., /passports and /did/... read it synchronously.
 *
 * Route groups take it with usePassportCache(app, sql) (released when the app closes). A route that
 * has just changed a passport calls passportChanged(sql, tokenId, serial) before answering, so a
 * read that follows on the same instance sees the change even if its NOTIFY is still in flight;
 * other instances follow through the NOTIFY.
 */
import type { FastifyInstance } from 'fastify';
import { ApiError } from '../errors.js';
import type { Sql } from 'postgres';
import { shareLiveCache, sharedLiveCache, type LiveCache } from '../../db/liveCache.js';
import { CHANNELS } from '../../db/notify.js';
import { findPassport, listAllPassports, passportKey, type PassportRow } from '../../db/queries/passports.js';

export type PassportCache = LiveCache<PassportRow, 'byAccount'>;

const NAME = 'passports';

function parseKey(payload: string): string | null {
  return /^\d+\.\d+\.\d+\/\d+$/.test(payload) ? payload : null;
}

/** The process's passport cache over this pool, started on first use and closed with the last app using it. */
export function usePassportCache(app: FastifyInstance, sql: Sql): PassportCache {
  const { cache, release } = shareLiveCache(
    sql,
    {
      name: NAME,
      channel: CHANNELS.passport,
      keyOf: (p: PassportRow) => passportKey(p.token_id, p.serial),
      keyOfPayload: parseKey,
      loadAll: listAllPassports,
      loadKey: async (s, key) => {
        const [tokenId, serial] = key.split('/');
        return findPassport(s, tokenId!, BigInt(serial!));
      },
      indexes: { byAccount: (p: PassportRow) => p.account_id },
    },
    { onError: (err) => app.log.warn({ err }, 'passport cache: load failed, retrying') },
  );
  app.addHook('onClose', release);
  return cache;
}

/** Read-your-writes after this process changed a passport: reload it now (bounded wait). */
export async function passportChanged(sql: Sql, tokenId: string, serial: number | bigint): Promise<void> {
  await sharedLiveCache<PassportRow, 'byAccount'>(sql, NAME)?.refresh(passportKey(tokenId, serial));
}

/** The active passport of an account on a network, if any. */
export function activePassportOf(cache: PassportCache, network: string, accountId: string): PassportRow | undefined {
  return cache.lookup('byAccount', accountId).find((p) => p.network === network && p.revoked_at === null);
}

/** Passports of an account as GET /passport/address lists them: active first, then newest first (at most 100). */
export function passportsOfAccount(cache: PassportCache, accountId: string, limit = 100): PassportRow[] {
  return cache
    .lookup('byAccount', accountId)
    .sort((a, b) => Number(b.revoked_at === null) - Number(a.revoked_at === null) || b.issued_at.getTime() - a.issued_at.getTime())
    .slice(0, limit);
}

const sortedMemo = new WeakMap<PassportCache, { version: number; rows: PassportRow[] }>();

/** One page of passports ordered by token id and serial, filtered like GET /passports. */
export function pageOfPassports(
  cache: PassportCache,
  filter: { network?: string; tokenId?: string; limit: number; offset: number },
): { rows: PassportRow[]; total: number } {
  let memo = sortedMemo.get(cache);
  if (!memo || memo.version !== cache.version) {
    const rows = [...cache.values()].sort((a, b) => (a.token_id < b.token_id ? -1 : a.token_id > b.token_id ? 1 : Number(a.serial - b.serial)));
    memo = { version: cache.version, rows };
    sortedMemo.set(cache, memo);
  }
  const matching = filter.network || filter.tokenId ? memo.rows.filter((p) => (!filter.network || p.network === filter.network) && (!filter.tokenId || p.token_id === filter.tokenId)) : memo.rows;
  return { rows: matching.slice(filter.offset, filter.offset + filter.limit), total: matching.length };
}


/** Waits for the first load of the cache (only right after start); 503 when PostgreSQL does not answer in time. */
export async function cacheReady(cache: PassportCache): Promise<void> {
  try {
    await cache.whenReady(5_000);
  } catch {
    throw new ApiError('service_unavailable', 'Passports are still loading from the database', { hint: 'Retry after 30 seconds' });
  }
}
