import type { Sql } from 'postgres';

/**
 * Passports (DESIGN.md sections 5 and 6):
 * - passports: the projection the API reads (one row per minted passport NFT; at most one active
 *   passport per account, enforced by a partial unique index);
 * - passport_issuances: one row per settled issuance payment, claimed by the API right after the
 *   x402 settlement (at most one pending issuance per account), finished by the issuance workflow;
 * - passport_upgrades: the same for upgrade payments (at most one pending upgrade per passport).
 * A payment that loses a race is recorded as 'refused' and refunded by a workflow, so it is never lost.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table passports (
      id                       bigserial primary key,
      network                  text not null,
      token_id                 text not null,
      serial                   bigint not null,
      account_id               text not null,
      did                      text not null,
      tier                     text not null check (tier in ('bronze', 'silver', 'gold', 'platinum')),
      capabilities             jsonb not null default '[]'::jsonb,
      endpoint                 text,
      issued_at                timestamptz not null,
      revoked_at               timestamptz,
      revoke_reason            text,
      payment_transaction_id   text not null,
      mint_transaction_id      text,
      deliver_transaction_id   text,
      workflow_id              text,
      created_at               timestamptz not null default now(),
      updated_at               timestamptz not null default now(),
      constraint passports_token_serial unique (token_id, serial)
    );
    create unique index passports_one_active_per_account on passports (network, account_id) where revoked_at is null;
    create index passports_account on passports (account_id);
    create index passports_did on passports (did);
    create index passports_network on passports (network, token_id, serial);

    create table passport_issuances (
      payment_transaction_id   text primary key,
      workflow_id              text not null,
      network                  text not null,
      account_id               text not null,
      did                      text not null,
      tier                     text not null,
      capabilities             jsonb not null default '[]'::jsonb,
      endpoint                 text,
      status                   text not null check (status in ('pending', 'issued', 'refused', 'refunded')),
      token_id                 text,
      serial                   bigint,
      refund_transaction_id    text,
      error                    text,
      created_at               timestamptz not null default now(),
      updated_at               timestamptz not null default now()
    );
    create unique index passport_issuances_one_pending on passport_issuances (network, account_id) where status = 'pending';

    create table passport_upgrades (
      payment_transaction_id   text primary key,
      workflow_id              text not null,
      token_id                 text not null,
      serial                   bigint not null,
      account_id               text not null,
      old_tier                 text not null,
      new_tier                 text not null,
      status                   text not null check (status in ('pending', 'upgraded', 'refused', 'refunded')),
      refund_transaction_id    text,
      error                    text,
      created_at               timestamptz not null default now(),
      updated_at               timestamptz not null default now()
    );
    create unique index passport_upgrades_one_pending on passport_upgrades (token_id, serial) where status = 'pending';
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists passport_upgrades; drop table if exists passport_issuances; drop table if exists passports;`);
}
