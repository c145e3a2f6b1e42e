import type { Sql } from 'postgres';

/**
 * Ownership challenges without a DID (SPEC 4.5: GET /api/trust/{domain}/challenge names no input).
 *
 * domain_challenges gains `publishes`, what the owner publishes in the TXT record or the well-known
 * file:
 *   - 'token': the token itself. Challenges issued for a DID (?did=...): only that DID can verify
 *     them, so the published token proves nothing for anyone else. Also every row written before
 *     this migration (bound, or legacy rows with no DID, which verify-ownership never accepts).
 *   - 'digest': base64url(sha256(token)). Challenges issued without a DID: did stays null until the
 *     first DID-signed POST .../verify-ownership presenting the token claims the row (did := signer),
 *     so someone who reads only the record or the file cannot claim it.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table domain_challenges
      add column publishes text not null default 'token' check (publishes in ('token', 'digest'));
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`alter table domain_challenges drop column if exists publishes;`);
}
