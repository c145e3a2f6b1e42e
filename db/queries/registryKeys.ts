/**
 * Queries of the registry keys (db/migrations/0012_registry_keys.ts). Every write of registry_keys
 * is announced by the migration's trigger on NOTIFY registry_key_changed (payload the id).
 *
 * The caps are counted in the registration's own transaction, so a refused registration leaves no
 * trace and two concurrent ones can never both take the last place:
 *  - per IP: a transaction-scoped advisory lock on the address digest serialises the registrations
 *    of one address; they count that address's rows of the last 24 h before inserting;
 *  - sponsored budget: one place of the day's quota (db/queries/quotas.ts, scope registry.sponsored,
 *    one window per UTC day) taken with its conditional upsert in the same transaction, whose row
 *    lock serialises concurrent takers across every API instance.
 * Times come from the caller (the API's clock), so tests can move the day.
 */
import type { Sql } from 'postgres';
import { REGISTRY_LIMITS, utcDay, type RegistryRecord } from '../../domain/registry.js';
import { giveBackQuota, takeQuota } from './quotas.js';

const DAY_MS = 86_400_000;
/** The sponsored budget in quota_counters: one service-wide counter per UTC day. */
const SPONSORED = { scope: 'registry.sponsored', subject: '*', windowMs: DAY_MS } as const;

export interface RegistryKeyRow {
  id: string;
  name: string;
  owner: string | null;
  sponsored: boolean;
  status: 'active' | 'revoked';
  key_sha256: Buffer;
  key_prefix: string;
  sponsored_day: string | null;
  directory_status: 'pending' | 'written' | 'failed' | null;
  directory_sequence: bigint | null;
  directory_transaction_id: string | null;
  created_at: Date;
  revoked_at: Date | null;
}

/** Columns the API reads (never the address digest). */
const COLUMNS = `id::text as id, name, owner, sponsored, status, key_sha256, key_prefix, sponsored_day::text as sponsored_day,
  directory_status, directory_sequence, directory_transaction_id, created_at, revoked_at`;

export function registryRecordOf(row: RegistryKeyRow): RegistryRecord {
  const record: RegistryRecord = {
    id: row.id,
    name: row.name,
    owner: row.owner,
    sponsored: row.sponsored,
    status: row.status,
    created_at: row.created_at.toISOString(),
    revoked_at: row.revoked_at?.toISOString() ?? null,
    key_prefix: row.key_prefix,
  };
  if (row.sponsored && row.directory_status) {
    record.directory_record = {
      status: row.directory_status,
      sequence_number: row.directory_sequence === null ? null : Number(row.directory_sequence),
      transaction_id: row.directory_transaction_id,
    };
  }
  return record;
}

export interface NewRegistration {
  id: string;
  name: string;
  owner: string | null;
  keySha256: Buffer;
  keyPrefix: string;
  ipSha256: Buffer;
  now: Date;
  /** registrations allowed per address per rolling 24 h */
  ipCap: number;
  /** sponsored registrations allowed per UTC day */
  sponsoredBudget: number;
}

export type RegistrationOutcome =
  | { ok: true; row: RegistryKeyRow }
  | { ok: false; refused: 'ip_cap'; retryAt: Date }
  | { ok: false; refused: 'sponsored_budget' };

class Refused extends Error {
  constructor(readonly outcome: RegistrationOutcome) {
    super('refused');
  }
}

/** Inserts a registration if the address's cap and (with an owner) the day's sponsored budget allow it. */
export async function insertRegistration(sql: Sql, r: NewRegistration): Promise<RegistrationOutcome> {
  const windowStart = new Date(r.now.getTime() - REGISTRY_LIMITS.ipWindowMs);
  try {
    return await sql.begin(async (tx) => {
      await tx`select pg_advisory_xact_lock(hashtextextended(${`registry-ip:${r.ipSha256.toString('hex')}`}, 0))`;
      const recent = await tx<{ created_at: Date }[]>`
        select created_at from registry_keys
        where ip_sha256 = ${r.ipSha256} and created_at > ${windowStart} and created_at <= ${r.now}
        order by created_at asc`;
      if (recent.length >= r.ipCap) {
        // the count falls under the cap once the (len - cap + 1) oldest rows have left the window
        const freeing = recent[recent.length - r.ipCap]!.created_at;
        throw new Refused({ ok: false, refused: 'ip_cap', retryAt: new Date(freeing.getTime() + REGISTRY_LIMITS.ipWindowMs) });
      }
      const day = r.owner === null ? null : utcDay(r.now);
      if (day !== null) {
        if (r.sponsoredBudget <= 0) throw new Refused({ ok: false, refused: 'sponsored_budget' });
        const taken = await takeQuota(tx, { ...SPONSORED, max: r.sponsoredBudget }, r.now);
        if (!taken.ok) throw new Refused({ ok: false, refused: 'sponsored_budget' });
      }
      const [row] = await tx<RegistryKeyRow[]>`
        insert into registry_keys (id, name, owner, sponsored, key_sha256, key_prefix, ip_sha256, sponsored_day, directory_status, created_at)
        values (${r.id}, ${r.name}, ${r.owner}, ${r.owner !== null}, ${r.keySha256}, ${r.keyPrefix}, ${r.ipSha256}, ${day},
                ${r.owner === null ? null : 'pending'}, ${r.now})
        returning ${tx.unsafe(COLUMNS)}`;
      return { ok: true as const, row: row! };
    });
  } catch (err) {
    if (err instanceof Refused) return err.outcome;
    throw err;
  }
}

/**
 * Undoes a registration whose sponsorship workflow could not be started: the row goes and its
 * place in the day's sponsored budget is given back (the per-IP count follows the rows).
 */
export async function withdrawRegistration(sql: Sql, id: string): Promise<void> {
  await sql.begin(async (tx) => {
    const [row] = await tx<{ sponsored_day: string | null }[]>`delete from registry_keys where id = ${id} returning sponsored_day::text as sponsored_day`;
    if (row?.sponsored_day) await giveBackQuota(tx, SPONSORED, dayStart(row.sponsored_day));
  });
}

/** The start of a UTC day (YYYY-MM-DD). */
function dayStart(day: string): Date {
  return new Date(`${day}T00:00:00.000Z`);
}

/** How many sponsored registrations a UTC day has taken. */
export async function sponsoredUsed(sql: Sql, day: string): Promise<number> {
  const [row] = await sql<{ count: number }[]>`
    select count from quota_counters where scope = ${SPONSORED.scope} and subject = ${SPONSORED.subject} and window_start = ${dayStart(day)}`;
  return row?.count ?? 0;
}

export async function findRegistryKey(sql: Sql, id: string): Promise<RegistryKeyRow | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const rows = await sql<RegistryKeyRow[]>`select ${sql.unsafe(COLUMNS)} from registry_keys where id = ${id}`;
  return rows[0] ?? null;
}

export async function findRegistryKeyByHash(sql: Sql, keySha256: Buffer): Promise<RegistryKeyRow | null> {
  const rows = await sql<RegistryKeyRow[]>`select ${sql.unsafe(COLUMNS)} from registry_keys where key_sha256 = ${keySha256}`;
  return rows[0] ?? null;
}

export async function listAllRegistryKeys(sql: Sql): Promise<RegistryKeyRow[]> {
  return sql<RegistryKeyRow[]>`select ${sql.unsafe(COLUMNS)} from registry_keys`;
}

/** Revokes an active key (instant, final); returns the row as it is afterwards (null when missing). */
export async function revokeRegistryKey(sql: Sql, id: string, now: Date): Promise<RegistryKeyRow | null> {
  const [row] = await sql<RegistryKeyRow[]>`
    update registry_keys set status = 'revoked', revoked_at = ${now}
    where id = ${id} and status = 'active'
    returning ${sql.unsafe(COLUMNS)}`;
  return row ?? findRegistryKey(sql, id);
}

/** The sponsored registration's directory record was written to the topic. */
export async function recordSponsoredWrite(sql: Sql, id: string, write: { sequenceNumber: number | null; transactionId: string }): Promise<void> {
  await sql`
    update registry_keys set directory_status = 'written', directory_sequence = ${write.sequenceNumber}, directory_transaction_id = ${write.transactionId}
    where id = ${id} and sponsored`;
}

/** The directory record could not be written for good (the key stays usable). */
export async function markSponsoredFailed(sql: Sql, id: string): Promise<void> {
  await sql`update registry_keys set directory_status = 'failed' where id = ${id} and sponsored and directory_status = 'pending'`;
}

/** The sponsored registration row a sponsoredRegistration run acts on (issue 26 item 2): its name, owner and directory status. */
export async function findSponsoredRecord(sql: Sql, id: string): Promise<{ name: string; owner: string | null; directory_status: RegistryKeyRow['directory_status'] } | null> {
  if (!/^[0-9a-f-]{36}$/i.test(id)) return null;
  const [row] = await sql<{ name: string; owner: string | null; directory_status: RegistryKeyRow['directory_status'] }[]>`
    select name, owner, directory_status from registry_keys where id = ${id} and sponsored`;
  return row ?? null;
}
