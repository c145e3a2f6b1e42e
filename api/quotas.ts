/**
 * Per-caller quotas of routes that make the operator pay (DESIGN.md section 11 "Costs"), counted in
 * PostgreSQL (db/queries/quotas.ts) so they hold across API instances. A full quota is a 429 in the
 * error schema with the rate-limit headers of that quota (X-RateLimit-Limit, -Remaining 0, -Reset as
 * a Unix timestamp, Retry-After in seconds) and a hint saying when to come back.
 */
import { createHash } from 'node:crypto';
import type { Sql } from 'postgres';
import { normalizeIP } from '@fastify/rate-limit';
import { ApiError } from './errors.js';
import { giveBackQuota, takeQuota, type QuotaSpec } from '../db/queries/quotas.js';
import type { ErrorCode } from '../domain/errors.js';

export const DAY_MS = 86_400_000;

/** The subject of a per-address quota: sha256 of the normalised address (no address is stored). */
export function addressSubject(ip: string): string {
  return createHash('sha256').update(normalizeIP(ip)).digest('hex');
}

function until(resetAt: Date, now: Date): string {
  const s = Math.max(1, Math.ceil((resetAt.getTime() - now.getTime()) / 1000));
  if (s < 120) return `${s} seconds`;
  if (s < 7200) return `${Math.ceil(s / 60)} minutes`;
  return `${Math.ceil(s / 3600)} hours`;
}

/**
 * Takes one place of each quota in order; the first full one throws `code` (429) with its headers,
 * and the places this call took before it are given back (a refused request costs nothing and
 * counts against nothing). A request let through is counted whatever its outcome: quotas count the
 * work started, not its success.
 */
export async function requireQuota(
  sql: Sql,
  quotas: (QuotaSpec & { what: string })[],
  opts: { code: ErrorCode; hint: string; now?: Date },
): Promise<void> {
  const now = opts.now ?? new Date();
  const taken: QuotaSpec[] = [];
  const giveBack = () => Promise.all(taken.map((q) => giveBackQuota(sql, q, now).catch(() => undefined)));
  for (const q of quotas) {
    let take;
    try {
      take = await takeQuota(sql, q, now);
    } catch {
      await giveBack();
      throw new ApiError('service_unavailable', 'The quota records cannot be read now', { hint: 'Retry after 30 seconds' });
    }
    if (take.ok) {
      taken.push(q);
      continue;
    }
    await giveBack();
    const seconds = Math.max(1, Math.ceil((take.resetAt.getTime() - now.getTime()) / 1000));
    throw new ApiError(opts.code, `Quota exceeded: ${q.what} (${q.max} per ${q.windowMs >= DAY_MS ? `${Math.round(q.windowMs / DAY_MS)} day(s)` : `${Math.round(q.windowMs / 60_000)} minutes`})`, {
      hint: `Retry in ${until(take.resetAt, now)} (X-RateLimit-Reset); ${opts.hint}`,
      headers: {
        'x-ratelimit-limit': String(q.max),
        'x-ratelimit-remaining': '0',
        'x-ratelimit-reset': String(Math.ceil(take.resetAt.getTime() / 1000)),
        'retry-after': String(seconds),
      },
    });
  }
}
