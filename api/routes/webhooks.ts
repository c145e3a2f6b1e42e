/**
 * Webhooks (issue 28; DESIGN.md section 12 "Events out"): POST /webhooks, GET /webhooks,
 * DELETE /webhooks/{id}, GET /webhooks/{id}/deliveries. Every route is DID-signed: the signer's own
 * subscriptions only. HTTP only; the state is api/webhooks/subscriptions.ts (app.webhooks).
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errorResponses } from '../schemas/common.js';
import { webhookCreateBodySchema, webhookCreatedSchema, webhookDeliveriesSchema, webhookListSchema, webhookParams } from '../schemas/events.js';

const SIGNED = 'DID-signed (X-Service-DID, X-Service-Challenge, X-Service-Signature): ';

const webhookRoutes: FastifyPluginAsyncZod = async (app) => {
  const signed = app.signedRequest();

  app.post(
    '/webhooks',
    {
      preHandler: signed,
      schema: {
        tags: ['webhooks'],
        summary: 'Subscribe a URL to your events; answers the signing secret once',
        description:
          SIGNED +
          'the signer must hold an active passport (404 passport_not_found), at most WEBHOOKS_PER_DID webhooks (409 webhook_limit_reached). ' +
          'Each event is POSTed as JSON { type, id, timestamp, subject, data } with the Standard Webhooks headers webhook-id (the event id, the same on every retry: dedup on it), webhook-timestamp and webhook-signature (HMAC-SHA256 with `secret`; verify with the `standardwebhooks` package). ' +
          'Events come in id order, at least once; a non-2xx answer is retried with backoff for WEBHOOK_RETRY_HOURS, then the webhook is disabled (status, disabledReason; a webhook.disabled event). The webhook receives what happens after its creation.',
        body: webhookCreateBodySchema,
        response: { 201: webhookCreatedSchema, ...errorResponses(400, 401, 404, 409, 429, 503) },
      },
    },
    async (request, reply) => {
      const created = await app.webhooks.create(request.auth!, request.body);
      reply.header('location', `/webhooks/${created.id}`);
      return reply.code(201).send(created);
    },
  );

  app.get(
    '/webhooks',
    {
      preHandler: signed,
      schema: {
        tags: ['webhooks'],
        summary: "The signer's webhooks (active and disabled), without their secrets",
        description: `${SIGNED}the signer's own webhooks.`,
        response: { 200: webhookListSchema, ...errorResponses(401, 429, 503) },
      },
    },
    async (request) => ({ webhooks: await app.webhooks.list(request.auth!.did) }),
  );

  app.delete(
    '/webhooks/:id',
    {
      preHandler: signed,
      schema: {
        tags: ['webhooks'],
        summary: 'Delete a webhook: its deliveries stop',
        description: `${SIGNED}one of the signer's webhooks (404 webhook_not_found otherwise).`,
        params: webhookParams,
        response: { 204: z.null().describe('deleted'), ...errorResponses(400, 401, 404, 429, 503) },
      },
    },
    async (request, reply) => {
      await app.webhooks.remove(request.auth!.did, request.params.id.toLowerCase());
      return reply.code(204).send(null);
    },
  );

  app.get(
    '/webhooks/:id/deliveries',
    {
      preHandler: signed,
      schema: {
        tags: ['webhooks'],
        summary: "A webhook's latest delivery attempts, newest first",
        description: `${SIGNED}one of the signer's webhooks (404 webhook_not_found otherwise). Each attempt: the event, its number, the HTTP status or the error, the time taken.`,
        params: webhookParams,
        querystring: z.object({ limit: z.coerce.number().int().min(1).max(100).default(50) }).strict(),
        response: { 200: webhookDeliveriesSchema, ...errorResponses(400, 401, 404, 429, 503) },
      },
    },
    async (request) => ({ deliveries: await app.webhooks.deliveries(request.auth!.did, request.params.id.toLowerCase(), request.query.limit) }),
  );
};

export default webhookRoutes;
