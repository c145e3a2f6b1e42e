import type { Sql } from 'postgres';

/**
 * Registry api keys (SPEC 2 "Registry api key", 3, 4.6; DESIGN.md sections 6 and 10 "Registry keys
 * and OAuth").
 *
 * registry_keys: one row per POST /api/v1/agents/register. key_sha256 is the sha256 of the whole
 * key (apk_...), the only trace of the key kept; key_prefix its first characters, shown to the
 * owner to tell keys apart. ip_sha256 is the sha256 of the caller's address (the per-IP cap counts
 * rows by it over a rolling 24 h; the address itself is not kept). status active -> revoked
 * (DELETE /api/v1/agents/me), never back. Sponsored rows (owner given) carry the directory record
 * written for them by the sponsoredRegistration workflow: directory_status pending -> written
 * (sequence number and transaction id of the directory topic message) or failed.
 * Every insert or update announces the row id on NOTIFY registry_key_changed (trigger: every
 * writer is covered), so each API process's key cache follows within a second.
 *
 * registry_sponsored_days: the sponsored budget, one counter per UTC day; a registration takes one
 * with a conditional upsert (used < budget) in its transaction, so concurrent registrations can
 * never take more than the budget.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table registry_keys (
      id                         uuid primary key,
      name                       text not null,
      owner                      text,
      sponsored                  boolean not null default false,
      status                     text not null default 'active' check (status in ('active', 'revoked')),
      key_sha256                 bytea not null unique check (octet_length(key_sha256) = 32),
      key_prefix                 text not null,
      ip_sha256                  bytea not null,
      sponsored_day              date,
      directory_status           text check (directory_status in ('pending', 'written', 'failed')),
      directory_sequence         bigint,
      directory_transaction_id   text,
      created_at                 timestamptz not null,
      revoked_at                 timestamptz,
      constraint registry_keys_revoked check ((status = 'revoked') = (revoked_at is not null)),
      constraint registry_keys_sponsored check (sponsored = (owner is not null) and sponsored = (sponsored_day is not null) and sponsored = (directory_status is not null))
    );
    create index registry_keys_ip on registry_keys (ip_sha256, created_at);

    create table registry_sponsored_days (
      day   date primary key,
      used  integer not null check (used >= 0)
    );

    create function registry_keys_notify() returns trigger language plpgsql as $$
    begin
      perform pg_notify('registry_key_changed', coalesce(new.id, old.id)::text);
      return null;
    end
    $$;
    create trigger registry_keys_changed after insert or update or delete on registry_keys
      for each row execute function registry_keys_notify();
  `);
}
