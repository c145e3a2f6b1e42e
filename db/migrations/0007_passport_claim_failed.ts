import type { Sql } from 'postgres';

/**
 * A passport issuance or upgrade claim can end 'failed': its payment could not be confirmed as
 * settled (no settled payment recorded and none on the ledger), so there is nothing to refund and
 * the wallet (or passport) is released for a new request. Every other failure after the claim ends
 * 'refunded'; no claim stays 'pending' once its workflow is over.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table passport_issuances drop constraint if exists passport_issuances_status_check;
    alter table passport_issuances add constraint passport_issuances_status_check
      check (status in ('pending', 'issued', 'refused', 'refunded', 'failed'));
    alter table passport_upgrades drop constraint if exists passport_upgrades_status_check;
    alter table passport_upgrades add constraint passport_upgrades_status_check
      check (status in ('pending', 'upgraded', 'refused', 'refunded', 'failed'));
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    update passport_issuances set status = 'refused' where status = 'failed';
    update passport_upgrades set status = 'refused' where status = 'failed';
    alter table passport_issuances drop constraint if exists passport_issuances_status_check;
    alter table passport_issuances add constraint passport_issuances_status_check
      check (status in ('pending', 'issued', 'refused', 'refunded'));
    alter table passport_upgrades drop constraint if exists passport_upgrades_status_check;
    alter table passport_upgrades add constraint passport_upgrades_status_check
      check (status in ('pending', 'upgraded', 'refused', 'refunded'));
  `);
}
