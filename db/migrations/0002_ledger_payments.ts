import type { Sql } from 'postgres';

/**
 * Ledger submissions (idempotent ledger writes: the transaction is recorded before it is submitted)
 * and x402 payments (each payment transaction is used once).
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table ledger_submissions (
      id               bigserial primary key,
      idempotency_key  text not null unique,
      kind             text not null default 'transaction',
      transaction_id   text not null,
      transaction_ids  jsonb not null default '[]'::jsonb,
      transaction_bytes bytea not null,
      valid_until      timestamptz not null,
      status           text not null check (status in ('pending', 'succeeded', 'failed', 'expired')),
      ledger_status    text,
      receipt          jsonb,
      attempts         integer not null default 1,
      created_at       timestamptz not null default now(),
      updated_at       timestamptz not null default now()
    );
    create index ledger_submissions_transaction_id on ledger_submissions (transaction_id);
    create index ledger_submissions_pending on ledger_submissions (status) where status = 'pending';

    create table payments (
      id               bigserial primary key,
      transaction_id   text not null unique,
      network          text not null,
      payer            text not null,
      pay_to           text not null,
      amount_tinybars  bigint not null check (amount_tinybars > 0),
      resource         text not null,
      description      text,
      status           text not null check (status in ('verified', 'settled', 'refunded')),
      settle_response  jsonb,
      refund_transaction_id text,
      created_at       timestamptz not null default now(),
      updated_at       timestamptz not null default now()
    );
    create index payments_payer on payments (payer);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists payments; drop table if exists ledger_submissions;`);
}
