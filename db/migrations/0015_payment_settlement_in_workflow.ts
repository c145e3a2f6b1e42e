import type { Sql } from 'postgres';

/**
 * x402 settlement moves into the passport workflows (issue 23): the API records a VERIFIED payment
 * together with its claim, before any money moves, and the workflow's first activity settles it.
 *
 * - payments.status gains 'failed': the settlement failed for good (the transaction expired unsettled,
 *   the payer's balance was short, ...) and nothing moved on the ledger.
 * - payments.valid_until: the end of the payment transaction's validity window (valid start + valid
 *   duration), so a payment never settled can be declared dead once the ledger can no longer take it.
 * - passport_issuances.failed_step / passport_upgrades.failed_step: the step a request failed at,
 *   as data (the API used to parse it from the error text). Rows written before are filled in once
 *   from that text here.
 * - an index for the payment reconciler (payments without an outcome, by age).
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table payments drop constraint if exists payments_status_check;
    alter table payments add constraint payments_status_check check (status in ('verified', 'settled', 'refunded', 'failed'));
    alter table payments add column valid_until timestamptz;
    create index payments_unfinished on payments (created_at) where status in ('verified', 'settled');

    alter table passport_issuances add column failed_step text
      check (failed_step in ('settle', 'confirmSettlement', 'mint', 'deliver', 'workflow start', 'workflow'));
    alter table passport_upgrades add column failed_step text
      check (failed_step in ('settle', 'confirmSettlement', 'metadata update', 'workflow start', 'workflow'));

    update passport_issuances
       set failed_step = substring(error from '^(mint|deliver|confirmSettlement) failed')
     where error ~ '^(mint|deliver|confirmSettlement) failed';
    update passport_issuances set failed_step = 'workflow start' where error like 'workflow not started%';
    update passport_issuances set failed_step = 'workflow' where error like 'workflow ended without a result%';
    update passport_upgrades
       set failed_step = substring(error from '^(metadata update|confirmSettlement) failed')
     where error ~ '^(metadata update|confirmSettlement) failed';
    update passport_upgrades set failed_step = 'workflow start' where error like 'workflow not started%';
    update passport_upgrades set failed_step = 'workflow' where error like 'workflow ended without a result%';
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    alter table passport_upgrades drop column if exists failed_step;
    alter table passport_issuances drop column if exists failed_step;
    drop index if exists payments_unfinished;
    alter table payments drop column if exists valid_until;
    delete from payments where status = 'failed';
    alter table payments drop constraint if exists payments_status_check;
    alter table payments add constraint payments_status_check check (status in ('verified', 'settled', 'refunded'));
  `);
}
