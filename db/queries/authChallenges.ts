/** Single-use sign-in challenges, shared by every API instance through PostgreSQL. */
import type { Sql } from 'postgres';

export async function insertChallenge(sql: Sql, c: { challenge: string; did: string; expiresAt: Date }): Promise<void> {
  await sql`insert into auth_challenges (challenge, did, expires_at) values (${c.challenge}, ${c.did}, ${c.expiresAt})`;
}

/**
 * Marks the challenge used if it was issued for this DID, is unused and unexpired; true when this
 * call consumed it. One UPDATE, so two concurrent requests can never both use it.
 */
export async function consumeChallenge(sql: Sql, challenge: string, did: string): Promise<boolean> {
  const rows = await sql`
    update auth_challenges set used_at = now()
    where challenge = ${challenge} and did = ${did} and used_at is null and expires_at > now()
    returning challenge`;
  return rows.length === 1;
}

/** True when the challenge was issued for this DID and is unused and unexpired (nothing changes). */
export async function isChallengeUsable(sql: Sql, challenge: string, did: string): Promise<boolean> {
  const rows = await sql`
    select 1 from auth_challenges where challenge = ${challenge} and did = ${did} and used_at is null and expires_at > now()`;
  return rows.length === 1;
}

/**
 * Housekeeping: expired challenges are useless (used or not); deletes those that expired before
 * `olderThan`, at most `batch` rows per statement so a backlog never holds a long lock. Returns
 * how many rows went.
 */
export async function deleteExpiredChallenges(sql: Sql, olderThan: Date, batch = 5_000): Promise<number> {
  let total = 0;
  for (;;) {
    const rows = await sql`
      delete from auth_challenges
      where challenge in (select challenge from auth_challenges where expires_at < ${olderThan} limit ${batch})
      returning 1`;
    total += rows.length;
    if (rows.length < batch) return total;
  }
}
