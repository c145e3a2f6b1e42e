import type { Sql } from 'postgres';

/**
 * Which workflow run took a paid request's claim to the ledger (issue 23, found by the chaos
 * run: a passport issued and its payment refunded). confirmSettlement, the last step before the mint (or
 * the metadata update of an upgrade), sets it on a pending claim; an API that abandons a claim whose
 * workflow run it saw end refuses the claim only while no other run has taken it. Both are single-row
 * updates, so PostgreSQL orders them: either a live run goes on to mint and the claim is never refused
 * (nor its payment refunded by that path), or the claim is refused first and any run refunds instead
 * of minting.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table passport_issuances add column ledger_writes_run_id text;
    alter table passport_upgrades add column ledger_writes_run_id text;
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table passport_issuances drop column ledger_writes_run_id;
    alter table passport_upgrades drop column ledger_writes_run_id;
  `);
}
