/**
 * Webhook subscriptions (issue 28; DESIGN.md section 12 "Events out"), the state behind
 * api/routes/webhooks.ts, decorated as `app.webhooks`:
 *
 *   create   the URL's form (domain/events.ts webhookUrlProblem: https in production, loopback only
 *            in development), the signer's active passport held on the ledger (404 passport_not_found),
 *            at most WEBHOOKS_PER_DID (409 webhook_limit_reached); a fresh Standard Webhooks secret
 *            (whsec_ + base64 of 32 random bytes) sealed into the row (db/webhookSecrets.ts) and
 *            answered this once; then its delivery workflow (webhookDelivery, id webhook:{id}) is
 *            started. Should Temporal be unreachable the subscription still stands: the worker's
 *            waker (worker/webhookWaker.ts) starts the workflow of every active subscription it sees.
 *   list, remove, deliveries   the signed-in DID's own subscriptions only (another's is not found).
 */
import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from 'postgres';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { heldActivePassport } from '../passports/heldPassport.js';
import { startOrAttach } from '../workflowCalls.js';
import { scopedWorkflowId } from '../workflowSettings.js';
import { webhookSecretOf, webhookUrlProblem } from '../../domain/events.js';
import { createWebhook, deleteWebhook, findWebhook, listDeliveries, listWebhooks, type DeliveryRow, type WebhookRow } from '../../db/queries/webhooks.js';
import { sealWebhookSecret } from '../../db/webhookSecrets.js';
import { webhookDeliveryContract, webhookDeliveryWorkflowId } from '../../workflows/contracts/webhookDelivery.js';

declare module 'fastify' {
  interface FastifyInstance {
    /** Webhook subscriptions (api/webhooks/subscriptions.ts). */
    webhooks: WebhookSubscriptions;
  }
}

export interface WebhookView {
  id: string;
  url: string;
  events: string[];
  capabilities: string[];
  status: 'active' | 'disabled';
  disabledReason: string | null;
  cursor: string | null;
  failingSince: string | null;
  lastError: string | null;
  createdAt: string;
}

export function webhookView(row: WebhookRow): WebhookView {
  return {
    id: row.id,
    url: row.url,
    events: row.events,
    capabilities: row.capabilities,
    status: row.status === 'disabled' ? 'disabled' : 'active',
    disabledReason: row.disabled_reason,
    cursor: row.cursor,
    failingSince: row.failing_since?.toISOString() ?? null,
    lastError: row.last_error,
    createdAt: row.created_at.toISOString(),
  };
}

const deliveryView = (d: DeliveryRow) => ({
  eventId: d.event_id,
  eventType: d.event_type,
  attempt: d.attempt,
  ok: d.ok,
  statusCode: d.status_code,
  error: d.error,
  durationMs: d.duration_ms,
  at: d.at.toISOString(),
});

const notFound = (id: string) => new ApiError('webhook_not_found', `No webhook ${id} of the signed-in DID`, { hint: 'GET /webhooks lists your webhooks' });

export class WebhookSubscriptions {
  constructor(
    private readonly app: FastifyInstance,
    private readonly ctx: AppContext,
    private readonly sql: Sql,
  ) {}

  async create(auth: { did: string; accountId: string }, body: { url: string; events: string[]; capabilities?: string[] | undefined }): Promise<WebhookView & { secret: string }> {
    const { config } = this.ctx;
    const problem = webhookUrlProblem(body.url, { production: config.NODE_ENV === 'production', development: config.NODE_ENV === 'development' });
    if (problem) throw new ApiError('invalid_request', problem, { hint: config.NODE_ENV === 'production' ? 'Give a public https URL' : 'Give a public https URL (http://localhost in development)' });
    const passport = await heldActivePassport(this.ctx, auth.accountId);
    if (!passport || passport.did !== auth.did) {
      throw new ApiError('passport_not_found', `${auth.did} holds no active passport`, { hint: 'Webhooks are for passport holders: buy one with POST /passport/request' });
    }
    const secret = webhookSecretOf(randomBytes(32));
    const row = await createWebhook(
      this.sql,
      {
        id: randomUUID(),
        ownerDid: auth.did,
        url: new URL(body.url).toString(),
        events: [...new Set(body.events)],
        capabilities: [...new Set(body.capabilities ?? [])],
        secretSealed: sealWebhookSecret(secret, config.PAYLOAD_CODEC_KEY),
      },
      config.WEBHOOKS_PER_DID,
    );
    if (row === 'limit') {
      throw new ApiError('webhook_limit_reached', `${auth.did} holds ${config.WEBHOOKS_PER_DID} webhooks already`, { hint: 'Delete one with DELETE /webhooks/{id} (GET /webhooks lists them)' });
    }
    await this.startDelivery(row);
    return { ...webhookView(row), secret };
  }

  /** Starts the subscription's delivery workflow; a failure is logged, not answered (the worker's waker starts it too). */
  private async startDelivery(row: WebhookRow): Promise<void> {
    const workflowId = scopedWorkflowId(this.app.workflowSettings, webhookDeliveryWorkflowId(row.id));
    try {
      await startOrAttach(this.ctx, webhookDeliveryContract, workflowId, { subscriptionId: row.id }, {
        staticSummary: `Webhook ${row.id} of ${row.owner_did} → ${new URL(row.url).host}`,
        staticDetails: `Delivers ${row.events.join(', ')}${row.capabilities.length ? ` (and new tasks with ${row.capabilities.join(', ')})` : ''} to ${row.url}, in event order, signed per Standard Webhooks.`,
      });
    } catch (err) {
      this.app.log.warn({ err, webhookId: row.id }, 'webhook delivery workflow not started; the worker starts it');
    }
  }

  async list(did: string): Promise<WebhookView[]> {
    return (await listWebhooks(this.sql, did)).map(webhookView);
  }

  async get(did: string, id: string): Promise<WebhookRow> {
    const row = await findWebhook(this.sql, id);
    if (!row || row.owner_did !== did) throw notFound(id);
    return row;
  }

  async remove(did: string, id: string): Promise<void> {
    if (!(await deleteWebhook(this.sql, id, did))) throw notFound(id);
  }

  async deliveries(did: string, id: string, limit: number) {
    await this.get(did, id);
    return (await listDeliveries(this.sql, id, limit)).map(deliveryView);
  }
}

export default fp<{ ctx: AppContext; sql: Sql }>(
  async (app, { ctx, sql }) => {
    app.decorate('webhooks', new WebhookSubscriptions(app, ctx, sql));
  },
  { name: 'webhooks' },
);
