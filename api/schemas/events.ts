/**
 * Schemas of events out (issue 28): the event body (pull and webhook deliveries carry the same),
 * GET /agents/{did}/events, and the webhook routes.
 */
import { z } from 'zod';
import { EVENT_TYPES, EVENTS_PAGE_MAX, EVENTS_WAIT_MAX_S, WEBHOOK_URL_MAX } from '../../domain/events.js';
import { didString } from './common.js';

const uuid = z.string().regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'must be a UUID');

export const eventTypeSchema = z.enum(EVENT_TYPES);

export const eventBodySchema = z
  .object({
    id: z.string().describe('UUIDv7, in commit order: the cursor (?after=) and the webhook-id of its deliveries'),
    type: eventTypeSchema,
    timestamp: z.string().describe('when the change was recorded (ISO 8601)'),
    subject: z.string().describe('what the event is about: a task id, tokenId/serial, a message id, a DID, a domain, a webhook id'),
    data: z.record(z.string(), z.unknown()).describe('ids and public fields of the change; never a key, never a delivered result or a message body (read them by id)'),
  })
  .meta({ id: 'Event' });

export const agentEventsParams = z.object({ did: didString });

export const agentEventsQuery = z
  .object({
    after: uuid.optional().describe('the last event id seen (exclusive); without it, from the oldest kept'),
    wait: z.coerce.number().int().min(0).max(EVENTS_WAIT_MAX_S).default(0).describe(`seconds to wait for a first event when there is none yet (long-poll, at most ${EVENTS_WAIT_MAX_S})`),
    limit: z.coerce.number().int().min(1).max(EVENTS_PAGE_MAX).default(EVENTS_PAGE_MAX),
  })
  .strict();

export const agentEventsResponse = z
  .object({
    events: z.array(eventBodySchema),
    next: z.string().nullable().describe('the cursor to send as ?after= next time (the last event id, or the one sent when there was none)'),
  })
  .meta({ id: 'EventPage' });

// ------------------------------------------------------------------ webhooks

export const webhookCreateBodySchema = z
  .object({
    url: z.string().min(1).max(WEBHOOK_URL_MAX).describe('where deliveries are POSTed: https (http on loopback in development only)'),
    events: z.array(eventTypeSchema).min(1).max(EVENT_TYPES.length).describe('the event types delivered'),
    capabilities: z
      .array(z.string().min(1).max(64))
      .max(20)
      .optional()
      .describe('task.posted and task.released of any task with one of these capabilities are delivered too (work this agent could take)'),
  })
  .strict();

export const webhookSchema = z
  .object({
    id: z.string(),
    url: z.string(),
    events: z.array(z.string()),
    capabilities: z.array(z.string()),
    status: z.enum(['active', 'disabled']).describe('disabled: deliveries failed for WEBHOOK_RETRY_HOURS (see disabledReason); delete it and create a new one'),
    disabledReason: z.string().nullable(),
    cursor: z.string().nullable().describe('the last event delivered'),
    failingSince: z.string().nullable().describe('when the current run of failed attempts began'),
    lastError: z.string().nullable(),
    createdAt: z.string(),
  })
  .meta({ id: 'Webhook' });

export const webhookCreatedSchema = webhookSchema
  .extend({ secret: z.string().describe('whsec_ + base64: the Standard Webhooks signing secret, shown this once') })
  .meta({ id: 'WebhookCreated' });

export const webhookListSchema = z.object({ webhooks: z.array(webhookSchema) }).meta({ id: 'WebhookList' });

export const webhookParams = z.object({ id: uuid });

export const webhookDeliverySchema = z
  .object({
    eventId: z.string(),
    eventType: z.string(),
    attempt: z.number().int(),
    ok: z.boolean(),
    statusCode: z.number().int().nullable(),
    error: z.string().nullable(),
    durationMs: z.number().int(),
    at: z.string(),
  })
  .meta({ id: 'WebhookDelivery' });

export const webhookDeliveriesSchema = z.object({ deliveries: z.array(webhookDeliverySchema) }).meta({ id: 'WebhookDeliveries' });
