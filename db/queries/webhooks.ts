/**
 * Webhook subscriptions and their delivery attempts (db/migrations/0070_events.ts). Every change of
 * a subscription is announced on NOTIFY webhook_changed (payload its id), in its transaction, so the
 * worker's waker (worker/webhookWaker.ts) follows which subscriptions are active.
 */
import type { Sql, TransactionSql } from 'postgres';
import { WEBHOOK_DELIVERIES_KEPT } from '../../domain/events.js';
import { CHANNELS, notifyChange } from '../notify.js';
import { appendEvents, latestEventId } from './events.js';

export type WebhookStatus = 'active' | 'disabled' | 'deleted';

export interface WebhookRow {
  id: string;
  owner_did: string;
  url: string;
  events: string[];
  capabilities: string[];
  secret_sealed: string;
  status: WebhookStatus;
  disabled_reason: string | null;
  cursor: string | null;
  failing_since: Date | null;
  last_error: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewWebhook {
  id: string;
  ownerDid: string;
  url: string;
  events: string[];
  capabilities: string[];
  secretSealed: string;
}

/**
 * Creates a subscription unless the DID already holds `max` (active or disabled: a disabled one is
 * deleted to make room). It starts after the newest event written: it receives what happens from now.
 */
export async function createWebhook(sql: Sql, w: NewWebhook, max: number): Promise<WebhookRow | 'limit'> {
  return sql.begin(async (tx) => {
    // one creation per DID at a time, so two concurrent creations cannot both pass the count
    await tx`select pg_advisory_xact_lock(hashtext(${`webhooks:${w.ownerDid}`}))`;
    const [held] = await tx<{ n: number }[]>`select count(*)::int as n from webhook_subscriptions where owner_did = ${w.ownerDid} and status <> 'deleted'`;
    if ((held?.n ?? 0) >= max) return 'limit' as const;
    const cursor = await latestEventId(tx);
    const [row] = await tx<WebhookRow[]>`
      insert into webhook_subscriptions (id, owner_did, url, events, capabilities, secret_sealed, cursor)
      values (${w.id}, ${w.ownerDid}, ${w.url}, ${w.events}, ${w.capabilities}, ${w.secretSealed}, ${cursor})
      returning *`;
    await notifyChange(tx, CHANNELS.webhook, w.id);
    return row!;
  }) as Promise<WebhookRow | 'limit'>;
}

export async function findWebhook(sql: Sql, id: string): Promise<WebhookRow | null> {
  const [row] = await sql<WebhookRow[]>`select * from webhook_subscriptions where id = ${id} and status <> 'deleted'`;
  return row ?? null;
}

export async function listWebhooks(sql: Sql, ownerDid: string): Promise<WebhookRow[]> {
  return sql<WebhookRow[]>`select * from webhook_subscriptions where owner_did = ${ownerDid} and status <> 'deleted' order by created_at, id`;
}

/** The active subscriptions (the waker's full load). */
export async function listActiveWebhooks(sql: Sql): Promise<WebhookRow[]> {
  return sql<WebhookRow[]>`select * from webhook_subscriptions where status = 'active'`;
}

/** Marks the owner's subscription deleted (its workflow ends at its next look); false when none. */
export async function deleteWebhook(sql: Sql, id: string, ownerDid: string): Promise<boolean> {
  return sql.begin(async (tx) => {
    const rows = await tx`
      update webhook_subscriptions set status = 'deleted', updated_at = now()
       where id = ${id} and owner_did = ${ownerDid} and status <> 'deleted' returning id`;
    if (rows.length) await notifyChange(tx, CHANNELS.webhook, id);
    return rows.length > 0;
  }) as Promise<boolean>;
}

/** Disables an active subscription with its reason and tells the owner (webhook.disabled, by pull and its other webhooks). */
export async function disableWebhook(sql: Sql, id: string, reason: string): Promise<boolean> {
  return sql.begin(async (tx) => {
    const [row] = await tx<WebhookRow[]>`
      update webhook_subscriptions set status = 'disabled', disabled_reason = ${reason.slice(0, 500)}, updated_at = now()
       where id = ${id} and status = 'active' returning *`;
    if (!row) return false;
    await notifyChange(tx, CHANNELS.webhook, id);
    await appendEvents(tx, [
      {
        type: 'webhook.disabled',
        subject: id,
        audience: [row.owner_did],
        data: { webhookId: id, url: row.url, reason: row.disabled_reason, cursor: row.cursor, failingSince: row.failing_since?.toISOString() ?? null },
        key: `webhook.disabled:${id}`,
      },
    ]);
    return true;
  }) as Promise<boolean>;
}

/** The subscription delivered `eventId` (2xx): its cursor moves there and its failure run ends. */
export async function advanceWebhookCursor(sql: Sql, id: string, eventId: string): Promise<void> {
  await sql`
    update webhook_subscriptions set cursor = ${eventId}, failing_since = null, last_error = null, updated_at = now()
     where id = ${id} and (cursor is null or cursor < ${eventId})`;
}

/** A failed attempt: the failure run starts now unless it already runs; returns when it started. */
export async function recordWebhookFailure(sql: Sql, id: string, error: string): Promise<Date> {
  const [row] = await sql<{ failing_since: Date }[]>`
    update webhook_subscriptions set failing_since = coalesce(failing_since, now()), last_error = ${error.slice(0, 500)}, updated_at = now()
     where id = ${id} returning failing_since`;
  return row?.failing_since ?? new Date();
}

export interface DeliveryAttempt {
  subscriptionId: string;
  eventId: string;
  eventType: string;
  attempt: number;
  ok: boolean;
  statusCode: number | null;
  error: string | null;
  durationMs: number;
}

export interface DeliveryRow {
  event_id: string;
  event_type: string;
  attempt: number;
  ok: boolean;
  status_code: number | null;
  error: string | null;
  duration_ms: number;
  at: Date;
}

/** Records an attempt, keeping the newest WEBHOOK_DELIVERIES_KEPT of the subscription. */
export async function recordDeliveryAttempt(sql: Sql | TransactionSql, a: DeliveryAttempt): Promise<void> {
  const [row] = await sql<{ id: string }[]>`
    insert into webhook_deliveries (subscription_id, event_id, event_type, attempt, ok, status_code, error, duration_ms)
    values (${a.subscriptionId}, ${a.eventId}, ${a.eventType}, ${a.attempt}, ${a.ok}, ${a.statusCode}, ${a.error?.slice(0, 500) ?? null}, ${a.durationMs})
    returning id`;
  // trim now and then (every 50th row), not on every attempt
  if (row && BigInt(row.id) % 50n === 0n) {
    await sql`
      delete from webhook_deliveries where subscription_id = ${a.subscriptionId}
         and id < (select id from webhook_deliveries where subscription_id = ${a.subscriptionId} order by id desc offset ${WEBHOOK_DELIVERIES_KEPT} limit 1)`;
  }
}

/** How many attempts of this event the subscription made so far. */
export async function attemptsOf(sql: Sql, subscriptionId: string, eventId: string): Promise<number> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where subscription_id = ${subscriptionId} and event_id = ${eventId}`;
  return row?.n ?? 0;
}

export async function listDeliveries(sql: Sql, subscriptionId: string, limit: number): Promise<DeliveryRow[]> {
  return sql<DeliveryRow[]>`
    select event_id, event_type, attempt, ok, status_code, error, duration_ms, at from webhook_deliveries
     where subscription_id = ${subscriptionId} order by id desc limit ${limit}`;
}
