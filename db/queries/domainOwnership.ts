/**
 * Domain ownership challenges (migrations 0011, 0035, 0045): handed out by GET
 * /api/trust/{domain}/challenge (?did=... binds it to that DID; without, the first DID to present
 * its token at POST .../verify-ownership claims it), proven by that DID, read
 * into every trust snapshot (findDomainOwnership) and by attest (findOwnershipBy). A proof names the
 * DID that made it (verified_by) and counts until ownership_expires_at (TRUST_OWNERSHIP_TTL_MS after
 * it was made); a new challenge proven the same way renews it. Every insert or update notifies
 * DOMAIN_OWNERSHIP_CHANNEL with the domain (trigger in 0011).
 */
import type { Sql } from 'postgres';
import { appendEvents } from './events.js';
import { ownershipTokenDigest, type OwnershipMethod } from '../../domain/domainName.js';

export type { OwnershipMethod };

/** NOTIFY channel (payload: the domain) raised by every change of a domain's challenges. */
export const DOMAIN_OWNERSHIP_CHANNEL = 'domain_ownership_changed';

/** SPEC 2, trust snapshot `domain_ownership`; verified_by and expires_at only on a proof. */
export interface DomainOwnership {
  method: OwnershipMethod | 'none';
  verified: boolean;
  /** ISO 8601, null while not verified */
  verified_at: string | null;
  challenge_token: string;
  /** what was found (e.g. `dns:_agent-passport.example.com TXT "agent-passport-verification=..."`); '' when not verified */
  proof: string;
  /** the DID that proved it (absent on proofs made before proofs named their DID) */
  verified_by?: string;
  /** ISO 8601: when the proof stops counting (renew with a new challenge) */
  expires_at?: string;
}

export type ChallengeStatus = 'pending' | 'verified' | 'expired';

/** What a challenge publishes: its token (issued for a DID) or the token's digest (issued without). */
export type ChallengePublishes = 'token' | 'digest';

export interface DomainChallengeRow {
  token: string;
  domain: string;
  /**
   * the DID the challenge is for: named when it was issued, or the first DID that presented the token
   * of a challenge issued without one (publishes 'digest'); null on those until then and on
   * challenges handed out before migration 0035
   */
  did: string | null;
  publishes: ChallengePublishes;
  status: ChallengeStatus;
  method: OwnershipMethod | null;
  proof: string | null;
  verified_at: Date | null;
  verified_by: string | null;
  ownership_expires_at: Date | null;
  expires_at: Date;
  checks: number;
  last_checked_at: Date | null;
  last_result: string | null;
  created_at: Date;
}

/** Rows that stopped mattering (challenge or proof over) stay this long, then are swept. */
export const CHALLENGE_RETENTION_MS = 86_400_000;
/** Most rows one sweep deletes (a sweep runs with every challenge written, so the table stays near its live size). */
const SWEEP_LIMIT = 100;

/**
 * The domain_ownership object of a snapshot of `domain`: its latest verified proof that has not
 * expired; null when it has none (the snapshot then says method 'none', verified false). A pending
 * challenge is not shown: anyone may ask for one, and asking must not change a domain's snapshot.
 */
export async function findDomainOwnership(sql: Sql, domain: string): Promise<DomainOwnership | null> {
  const rows = await sql<DomainChallengeRow[]>`
    select * from domain_challenges
    where domain = ${domain} and status = 'verified' and ownership_expires_at > now()
    order by verified_at desc limit 1`;
  return rows[0] ? ownershipOf(rows[0]) : null;
}

/** The latest unexpired proof of `domain` made by `did`, or null. */
export async function findOwnershipBy(sql: Sql, domain: string, did: string): Promise<DomainChallengeRow | null> {
  const rows = await sql<DomainChallengeRow[]>`
    select * from domain_challenges
    where domain = ${domain} and status = 'verified' and verified_by = ${did} and ownership_expires_at > now()
    order by ownership_expires_at desc limit 1`;
  return rows[0] ?? null;
}

/** A challenge row as the snapshot's domain_ownership object. */
export function ownershipOf(row: DomainChallengeRow): DomainOwnership {
  const verified = row.status === 'verified';
  return {
    method: verified && row.method ? row.method : 'none',
    verified,
    verified_at: verified && row.verified_at ? row.verified_at.toISOString() : null,
    challenge_token: publishedValue(row),
    proof: verified ? (row.proof ?? '') : '',
    ...(verified && row.verified_by ? { verified_by: row.verified_by } : {}),
    ...(verified && row.ownership_expires_at ? { expires_at: row.ownership_expires_at.toISOString() } : {}),
  };
}

/**
 * What the challenge's record or file carries (the value after `agent-passport-verification=`): the
 * token, or for a challenge issued without a DID the token's digest (the token itself is never shown).
 */
export function publishedValue(row: Pick<DomainChallengeRow, 'token' | 'publishes'>): string {
  return row.publishes === 'digest' ? ownershipTokenDigest(row.token) : row.token;
}

/** Whether a verified row's proof still counts. */
export function ownershipCurrent(row: DomainChallengeRow, now: Date = new Date()): boolean {
  return row.status === 'verified' && row.ownership_expires_at !== null && row.ownership_expires_at.getTime() > now.getTime();
}

/**
 * Deletes (at most SWEEP_LIMIT) rows whose challenge and proof ended more than
 * CHALLENGE_RETENTION_MS ago: pending or expired challenges past their 24 h, proofs past their
 * expiry. Returns how many went.
 */
export async function sweepChallenges(sql: Sql): Promise<number> {
  const rows = await sql`
    delete from domain_challenges where token in (
      select token from domain_challenges
      where coalesce(ownership_expires_at, expires_at) < now() - ${`${CHALLENGE_RETENTION_MS} milliseconds`}::interval
      limit ${SWEEP_LIMIT})
    returning 1`;
  return rows.length;
}

/** Writes a new challenge (and sweeps old rows first, bounded): for `did`, or without one (null: it publishes the token's digest). */
export async function insertDomainChallenge(
  sql: Sql,
  c: { token: string; domain: string; did: string | null; expiresAt: Date },
): Promise<DomainChallengeRow> {
  await sweepChallenges(sql);
  const publishes: ChallengePublishes = c.did === null ? 'digest' : 'token';
  const [row] = await sql<DomainChallengeRow[]>`
    insert into domain_challenges (token, domain, did, publishes, expires_at) values (${c.token}, ${c.domain}, ${c.did}, ${publishes}, ${c.expiresAt})
    returning *`;
  return row!;
}

/** The challenge `token` of `domain`, or null (a token of another domain is not found). */
export async function findDomainChallenge(sql: Sql, domain: string, token: string): Promise<DomainChallengeRow | null> {
  const rows = await sql<DomainChallengeRow[]>`
    select * from domain_challenges where token = ${token} and domain = ${domain}`;
  return rows[0] ?? null;
}

/**
 * The newest pending challenge of `domain` issued for `did` with more than `minLeftMs` left (GET
 * .../challenge?did= hands it out again). A challenge issued without a DID is never handed out again:
 * its token is the requester's secret, even once claimed.
 */
export async function findOpenChallenge(sql: Sql, domain: string, did: string, minLeftMs = 60_000): Promise<DomainChallengeRow | null> {
  const rows = await sql<DomainChallengeRow[]>`
    select * from domain_challenges
    where domain = ${domain} and did = ${did} and publishes = 'token' and status = 'pending'
      and expires_at > now() + ${`${minLeftMs} milliseconds`}::interval
    order by created_at desc limit 1`;
  return rows[0] ?? null;
}

/**
 * Gives a pending challenge issued without a DID to `did`, the first DID that presents its token
 * (atomic: of two DIDs presenting it at once, one gets it). Returns the row afterwards (its did may
 * be another DID's), or null when there is no such challenge.
 */
export async function claimChallenge(sql: Sql, domain: string, token: string, did: string): Promise<DomainChallengeRow | null> {
  const rows = await sql<DomainChallengeRow[]>`
    update domain_challenges set did = ${did}
    where token = ${token} and domain = ${domain} and publishes = 'digest' and did is null and status = 'pending'
    returning *`;
  return rows[0] ?? findDomainChallenge(sql, domain, token);
}

/**
 * Records one check of a pending, unexpired challenge: a proof found marks it verified (once; a
 * verified or expired row is left as it is), by the DID it was issued for, valid for
 * `ownershipTtlMs`; otherwise only the count and the last result move. Returns the row as it is
 * afterwards.
 */
export async function recordChallengeCheck(
  sql: Sql,
  token: string,
  outcome: { proven: { method: OwnershipMethod; proof: string } | null; result: string },
  ownershipTtlMs: number,
): Promise<DomainChallengeRow | null> {
  const rows = await sql.begin(async (tx) => {
    const changed = await checkChallenge(tx as unknown as Sql, token, outcome, ownershipTtlMs);
    const row = changed[0];
    // the proving DID's event, last in the transaction
    if (row && row.status === 'verified' && row.verified_by) {
      await appendEvents(tx, [
        {
          type: 'trust.ownership_verified',
          subject: row.domain,
          audience: [row.verified_by],
          data: { domain: row.domain, did: row.verified_by, method: row.method, ownershipExpiresAt: row.ownership_expires_at?.toISOString() ?? null },
          key: `trust.ownership_verified:${row.token}`,
        },
      ]);
    }
    return changed;
  });
  if (rows[0]) return rows[0];
  return (await sql<DomainChallengeRow[]>`select * from domain_challenges where token = ${token}`)[0] ?? null;
}

function checkChallenge(
  sql: Sql,
  token: string,
  outcome: { proven: { method: OwnershipMethod; proof: string } | null; result: string },
  ownershipTtlMs: number,
) {
  const p = outcome.proven;
  return sql<DomainChallengeRow[]>`
    update domain_challenges set
      checks = checks + 1,
      last_checked_at = now(),
      last_result = ${outcome.result.slice(0, 500)},
      status = case when ${p !== null} then 'verified' else status end,
      method = case when ${p !== null} then ${p?.method ?? null} else method end,
      proof = case when ${p !== null} then ${p?.proof.slice(0, 1000) ?? null} else proof end,
      verified_at = case when ${p !== null} then now() else verified_at end,
      verified_by = case when ${p !== null} then did else verified_by end,
      ownership_expires_at = case when ${p !== null} then now() + ${`${ownershipTtlMs} milliseconds`}::interval else ownership_expires_at end
    where token = ${token} and status = 'pending'
    returning *`;
}

/** Marks a pending challenge expired (the workflow's end without proof); returns the row afterwards. */
export async function expireChallenge(sql: Sql, token: string): Promise<DomainChallengeRow | null> {
  await sql`update domain_challenges set status = 'expired' where token = ${token} and status = 'pending'`;
  return (await sql<DomainChallengeRow[]>`select * from domain_challenges where token = ${token}`)[0] ?? null;
}
