/**
 * Domain ownership challenges (migration 0011): handed out by GET /api/trust/{domain}/challenge,
 * settled by the domainOwnership workflow, read into every trust snapshot (findDomainOwnership).
 * Every insert or update notifies DOMAIN_OWNERSHIP_CHANNEL with the domain (trigger in 0011).
 */
import type { Sql } from 'postgres';

/** NOTIFY channel (payload: the domain) raised by every change of a domain's challenges. */
export const DOMAIN_OWNERSHIP_CHANNEL = 'domain_ownership_changed';

export type OwnershipMethod = 'dns' | 'well-known';

/** SPEC 2, trust snapshot `domain_ownership`. */
export interface DomainOwnership {
  method: OwnershipMethod | 'none';
  verified: boolean;
  /** ISO 8601, null while not verified */
  verified_at: string | null;
  challenge_token: string;
  /** what was found (e.g. `dns:_agent-passport.example.com TXT "agent-passport-verification=..."`); '' when not verified */
  proof: string;
}

export type ChallengeStatus = 'pending' | 'verified' | 'expired';

export interface DomainChallengeRow {
  token: string;
  domain: string;
  status: ChallengeStatus;
  method: OwnershipMethod | null;
  proof: string | null;
  verified_at: Date | null;
  expires_at: Date;
  checks: number;
  last_checked_at: Date | null;
  last_result: string | null;
  created_at: Date;
}

/**
 * The domain_ownership object of a snapshot of `domain`: its latest verified challenge (a proof
 * stays valid once made); else its latest unexpired pending challenge, not verified (method
 * 'none'); null when the domain has neither (the snapshot then says method 'none', verified false).
 */
export async function findDomainOwnership(sql: Sql, domain: string): Promise<DomainOwnership | null> {
  const rows = await sql<DomainChallengeRow[]>`
    (select * from domain_challenges where domain = ${domain} and status = 'verified'
      order by verified_at desc limit 1)
    union all
    (select * from domain_challenges where domain = ${domain} and status = 'pending' and expires_at > now()
      order by created_at desc limit 1)`;
  const row = rows.find((r) => r.status === 'verified') ?? rows[0];
  if (!row) return null;
  return ownershipOf(row);
}

/** A challenge row as the snapshot's domain_ownership object. */
export function ownershipOf(row: DomainChallengeRow): DomainOwnership {
  const verified = row.status === 'verified';
  return {
    method: verified && row.method ? row.method : 'none',
    verified,
    verified_at: verified && row.verified_at ? row.verified_at.toISOString() : null,
    challenge_token: row.token,
    proof: verified ? (row.proof ?? '') : '',
  };
}

export async function insertDomainChallenge(
  sql: Sql,
  c: { token: string; domain: string; expiresAt: Date },
): Promise<DomainChallengeRow> {
  const [row] = await sql<DomainChallengeRow[]>`
    insert into domain_challenges (token, domain, expires_at) values (${c.token}, ${c.domain}, ${c.expiresAt})
    returning *`;
  return row!;
}

/** The challenge `token` of `domain`, or null (a token of another domain is not found). */
export async function findDomainChallenge(sql: Sql, domain: string, token: string): Promise<DomainChallengeRow | null> {
  const rows = await sql<DomainChallengeRow[]>`
    select * from domain_challenges where token = ${token} and domain = ${domain}`;
  return rows[0] ?? null;
}

/** The newest pending, unexpired challenge of `domain` (GET .../challenge hands it out again). */
export async function findOpenChallenge(sql: Sql, domain: string): Promise<DomainChallengeRow | null> {
  const rows = await sql<DomainChallengeRow[]>`
    select * from domain_challenges
    where domain = ${domain} and status = 'pending' and expires_at > now() + interval '1 minute'
    order by created_at desc limit 1`;
  return rows[0] ?? null;
}

/**
 * Records one check of a pending challenge: a proof found marks it verified (once; a verified or
 * expired row is left as it is); otherwise only the count and the last result move. Returns the row
 * as it is afterwards.
 */
export async function recordChallengeCheck(
  sql: Sql,
  token: string,
  outcome: { proven: { method: OwnershipMethod; proof: string } | null; result: string },
): Promise<DomainChallengeRow | null> {
  const p = outcome.proven;
  const rows = await sql<DomainChallengeRow[]>`
    update domain_challenges set
      checks = checks + 1,
      last_checked_at = now(),
      last_result = ${outcome.result.slice(0, 500)},
      status = case when ${p !== null} then 'verified' else status end,
      method = case when ${p !== null} then ${p?.method ?? null} else method end,
      proof = case when ${p !== null} then ${p?.proof.slice(0, 1000) ?? null} else proof end,
      verified_at = case when ${p !== null} then now() else verified_at end
    where token = ${token} and status = 'pending'
    returning *`;
  if (rows[0]) return rows[0];
  return (await sql<DomainChallengeRow[]>`select * from domain_challenges where token = ${token}`)[0] ?? null;
}

/** Marks a pending challenge expired (the workflow's end without proof); returns the row afterwards. */
export async function expireChallenge(sql: Sql, token: string): Promise<DomainChallengeRow | null> {
  await sql`update domain_challenges set status = 'expired' where token = ${token} and status = 'pending'`;
  return (await sql<DomainChallengeRow[]>`select * from domain_challenges where token = ${token}`)[0] ?? null;
}
