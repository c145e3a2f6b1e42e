import type { Sql } from 'postgres';

/**
 * Domain ownership proofs name their DID and expire (issue 19 item 8, issue 20 item 1).
 *
 * domain_challenges gains:
 *   - did: the DID the challenge was issued for (GET /api/trust/{domain}/challenge?did=...). Only
 *     that DID, signed in, can verify it (POST .../verify-ownership), so a token copied from a
 *     published TXT record or well-known file proves nothing for anyone else. Null on challenges
 *     handed out before this migration (their domainOwnership workflows may still be running).
 *   - verified_by: the DID that proved the ownership (= did for new proofs; null for older ones).
 *   - ownership_expires_at: when a verified ownership stops counting (verified_at +
 *     TRUST_OWNERSHIP_TTL_MS, default 30 days); a new challenge and verify renew it. Older verified
 *     rows get verified_at + 30 days.
 * Old rows are swept when a challenge is written (db/queries/domainOwnership.ts sweepChallenges),
 * hence the index on the time a row stops mattering.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table domain_challenges
      add column did text,
      add column verified_by text,
      add column ownership_expires_at timestamptz;
    update domain_challenges set ownership_expires_at = verified_at + interval '30 days' where status = 'verified';
    alter table domain_challenges add constraint domain_challenges_ownership_expiry
      check ((status = 'verified') = (ownership_expires_at is not null));
    create index domain_challenges_owner on domain_challenges (domain, verified_by, ownership_expires_at desc) where status = 'verified';
    create index domain_challenges_open on domain_challenges (domain, did, created_at desc) where status = 'pending';
    create index domain_challenges_sweep on domain_challenges ((coalesce(ownership_expires_at, expires_at)));
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    drop index if exists domain_challenges_sweep;
    drop index if exists domain_challenges_open;
    drop index if exists domain_challenges_owner;
    alter table domain_challenges drop constraint if exists domain_challenges_ownership_expiry;
    alter table domain_challenges drop column if exists ownership_expires_at, drop column if exists verified_by, drop column if exists did;
  `);
}
