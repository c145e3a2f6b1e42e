/**
 * deliverWebhookEvents, the one activity of webhookDelivery (workflows/webhookDelivery.ts; issue 28):
 * one round of a subscription's deliveries.
 *
 *   1. the subscription row (gone or not active: the round says the run ends);
 *   2. the next WEBHOOK_BATCH events after its cursor that reach it (db/queries/events.ts);
 *   3. for each, in id order: the body { type, id, timestamp, subject, data }, signed per Standard
 *      Webhooks with the `standardwebhooks` package (webhook-id = the event id, the same on every
 *      attempt, so the receiver dedups; webhook-timestamp = this attempt), POSTed through the SSRF
 *      guard (net/safeFetch: public addresses only, loopback too in development, no redirects,
 *      10 s); every attempt is recorded (GET /webhooks/{id}/deliveries); a 2xx moves the cursor;
 *   4. any other answer stops the round: the failure run's start is kept on the row, and once it is
 *      WEBHOOK_RETRY_HOURS old the subscription is disabled with its reason (and the owner told,
 *      webhook.disabled); before that the activity fails, and Temporal retries it with backoff.
 * The secret is opened from the row in memory here: never in the workflow's input or history, never logged.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Webhook } from 'standardwebhooks';
import type { Sql } from 'postgres';
import { WEBHOOK_BATCH, WEBHOOK_TIMEOUT_MS } from '../../domain/events.js';
import { eventBody, listEventsForSubscription, type EventRow } from '../../db/queries/events.js';
import {
  advanceWebhookCursor,
  attemptsOf,
  disableWebhook,
  findWebhook,
  recordDeliveryAttempt,
  recordWebhookFailure,
  type WebhookRow,
} from '../../db/queries/webhooks.js';
import { openWebhookSecret } from '../../db/webhookSecrets.js';
import { safeFetch, SafeFetchError } from '../../net/safeFetch.js';
import type { DeliveryRound } from '../../workflows/contracts/webhookDelivery.js';

export interface WebhookDeliveryDeps {
  sql: Sql;
  /** PAYLOAD_CODEC_KEY: the sealing key of the secrets is derived from it (db/webhookSecrets.ts) */
  codecKey: string | undefined;
  /** WEBHOOK_RETRY_HOURS */
  retryHours: number;
  /** NODE_ENV=development: loopback receivers are allowed (an agent on the same machine) */
  development: boolean;
  /** TRUST_ALLOW_PRIVATE (tests only): any address */
  allowPrivate: boolean;
}

type Attempt = { ok: true; status: number } | { ok: false; status: number | null; error: string };

export function createWebhookDeliveryActivities(deps: WebhookDeliveryDeps) {
  async function post(sub: WebhookRow, wh: Webhook, ev: EventRow): Promise<Attempt> {
    const body = JSON.stringify(eventBody(ev));
    const at = new Date();
    const headers = {
      'webhook-id': ev.id,
      'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
      'webhook-signature': wh.sign(ev.id, at, body),
    };
    try {
      const res = await safeFetch(sub.url, {
        post: { body, headers },
        maxRedirects: 0,
        timeoutMs: WEBHOOK_TIMEOUT_MS,
        maxBytes: 16 * 1024,
        allowPrivate: deps.allowPrivate,
        allowLoopback: deps.development,
        accept: '*/*',
      });
      if (res.status >= 200 && res.status < 300) return { ok: true, status: res.status };
      return { ok: false, status: res.status, error: `the receiver answered ${res.status}` };
    } catch (err) {
      if (err instanceof SafeFetchError) {
        if (err.reason === 'too_many_redirects') return { ok: false, status: null, error: 'the receiver answered a redirect (not followed: give the final URL)' };
        return { ok: false, status: null, error: `${err.reason}: ${err.message}` };
      }
      throw err;
    }
  }

  async function deliverWebhookEvents(input: { subscriptionId: string }): Promise<DeliveryRound> {
    const sub = await findWebhook(deps.sql, input.subscriptionId);
    if (!sub) return { status: 'ended', ended: 'deleted' };
    if (sub.status !== 'active') return { status: 'ended', ended: 'disabled', ...(sub.disabled_reason ? { reason: sub.disabled_reason } : {}) };
    const events = await listEventsForSubscription(deps.sql, { ownerDid: sub.owner_did, events: sub.events, capabilities: sub.capabilities }, sub.cursor, WEBHOOK_BATCH);
    if (events.length === 0) return { status: 'delivered', delivered: 0, lastEventId: null, more: false };
    const wh = new Webhook(openWebhookSecret(sub.secret_sealed, deps.codecKey));
    let delivered = 0;
    let lastEventId: string | null = null;
    for (const ev of events) {
      Context.current().heartbeat();
      const attempt = (await attemptsOf(deps.sql, sub.id, ev.id)) + 1;
      const started = Date.now();
      const r = await post(sub, wh, ev);
      await recordDeliveryAttempt(deps.sql, {
        subscriptionId: sub.id,
        eventId: ev.id,
        eventType: ev.type,
        attempt,
        ok: r.ok,
        statusCode: r.status,
        error: r.ok ? null : r.error,
        durationMs: Date.now() - started,
      });
      if (r.ok) {
        await advanceWebhookCursor(deps.sql, sub.id, ev.id);
        delivered++;
        lastEventId = ev.id;
        continue;
      }
      const failingSince = await recordWebhookFailure(deps.sql, sub.id, r.error);
      if (Date.now() - failingSince.getTime() >= deps.retryHours * 3_600_000) {
        const reason = `deliveries failed for ${deps.retryHours} hours (last: ${r.error})`;
        await disableWebhook(deps.sql, sub.id, reason);
        return { status: 'ended', ended: 'disabled', reason };
      }
      // Temporal retries the round with backoff; the cursor keeps what was delivered
      throw ApplicationFailure.retryable(`event ${ev.id}: ${r.error}`, 'WebhookDeliveryFailed');
    }
    return { status: 'delivered', delivered, lastEventId, more: events.length === WEBHOOK_BATCH };
  }

  return { deliverWebhookEvents };
}

export type WebhookDeliveryActivities = ReturnType<typeof createWebhookDeliveryActivities>;
