import type { Sql } from 'postgres';

/**
 * Events out (issue 28; domain/events.ts, db/queries/events.ts).
 *
 * events: every state change an agent acts on, written in the transaction of its projection row.
 * The id (UUIDv7) is the cursor of pull and webhook delivery, so ids must be in COMMIT order: a
 * reader that has seen id X must never later find a committed event with an id below X. Writers
 * take a transaction-level advisory lock (EVENTS_LOCK in db/queries/events.ts) as the last step of
 * their transaction, make ids greater than the greatest written, insert and commit: the lock is held
 * until commit, so the next writer's ids are made after this one's are visible. dedupe_key makes a
 * retried projection write add nothing.
 *
 * webhook_subscriptions: a DID's webhooks; secret_sealed is the Standard Webhooks secret encrypted
 * with a key derived from PAYLOAD_CODEC_KEY (db/webhookSecrets.ts), never stored in clear; cursor is
 * the last event delivered (the delivery workflow's activity advances it after each 2xx).
 * webhook_deliveries: the last attempts per subscription (GET /webhooks/{id}/deliveries), trimmed.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table events (
      id uuid primary key,
      type text not null,
      subject text not null,
      audience text[] not null,
      capabilities text[] not null default '{}',
      occurred_at timestamptz not null default now(),
      data jsonb not null,
      dedupe_key text not null unique
    );
    create index events_audience on events using gin (audience);
    create index events_capabilities on events using gin (capabilities) where cardinality(capabilities) > 0;

    create table webhook_subscriptions (
      id uuid primary key,
      owner_did text not null,
      url text not null,
      events text[] not null,
      capabilities text[] not null default '{}',
      secret_sealed text not null,
      status text not null default 'active' check (status in ('active', 'disabled', 'deleted')),
      disabled_reason text,
      cursor uuid,
      failing_since timestamptz,
      last_error text,
      created_at timestamptz not null default now(),
      updated_at timestamptz not null default now()
    );
    create index webhook_subscriptions_owner on webhook_subscriptions (owner_did) where status <> 'deleted';

    create table webhook_deliveries (
      id bigserial primary key,
      subscription_id uuid not null references webhook_subscriptions (id) on delete cascade,
      event_id uuid not null,
      event_type text not null,
      attempt int not null,
      ok boolean not null,
      status_code int,
      error text,
      duration_ms int not null,
      at timestamptz not null default now()
    );
    create index webhook_deliveries_subscription on webhook_deliveries (subscription_id, id desc);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table webhook_deliveries; drop table webhook_subscriptions; drop table events;`);
}
