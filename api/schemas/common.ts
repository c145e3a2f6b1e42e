/** zod schemas shared by many routes, and the request type of a named handler. */
import type { FastifyRequest, FastifySchema, RawRequestDefaultExpression, RawServerDefault, RouteGenericInterface } from 'fastify';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CAPABILITIES } from '../../domain/capabilities.js';
import { TIERS } from '../../domain/tiers.js';

export const errorBodySchema = z
  .object({
    error: z.string(),
    code: z.string(),
    retryable: z.boolean().optional(),
    hint: z.string().optional(),
  })
  .loose()
  .meta({ id: 'ErrorBody' });

export const linkMapSchema = z.record(z.string(), z.object({ href: z.string(), method: z.enum(['GET', 'POST']).optional() }));

export const tierSchema = z.enum(TIERS);
export const capabilitySchema = z.enum(CAPABILITIES);

/**
 * Bounds on strings the API accepts (issue 8): every client string has a maximum length, so no
 * oversized value reaches a query, the ledger or an error message.
 */
export const LIMITS = { did: 128, tier: 32, capability: 32, entityId: 32, serial: 20, url: 512, network: 16, reason: 500 } as const;
export const didString = z.string().min(1).max(LIMITS.did);
export const entityIdString = z.string().min(1).max(LIMITS.entityId);
export const tierString = z.string().min(1).max(LIMITS.tier);
/** An http(s) URL (no javascript:, data:, file: ...). */
export const httpUrl = z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).max(LIMITS.url);

/** limit default 20, max 100; offset >= 0 and at most 10^9 (DESIGN.md section 6). */
export const paginationQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).max(1_000_000_000).default(0),
};

/**
 * The 202 request_pending answer (api/workflowCalls.ts WorkflowPending, answered by the error
 * handler): the work was accepted and is still running; poll the Location (also _links.poll).
 * /openapi.json documents the Location header with it (api/plugins/openapi.ts).
 */
export const pendingBodySchema = z
  .object({
    error: z.string(),
    code: z.literal('request_pending'),
    retryable: z.boolean().optional(),
    hint: z.string().optional(),
    workflowId: z.string().describe('the workflow doing the work'),
    _links: z.object({ poll: z.object({ href: z.string().describe('the same URL as the Location header') }) }),
  })
  .loose()
  .meta({
    id: 'PendingBody',
    description: 'request_pending: the request was accepted and is still running. GET the Location header URL (also _links.poll.href) until it shows the outcome; sending the same request again attaches to the same work.',
  });

/**
 * Error responses a route documents, keyed by status. 202 is the request_pending answer
 * (pendingBodySchema, with its Location header in /openapi.json).
 */
export function errorResponses(...statuses: number[]): Record<number, typeof errorBodySchema | typeof pendingBodySchema> {
  return Object.fromEntries(statuses.map((s) => [s, s === 202 ? pendingBodySchema : errorBodySchema]));
}

/**
 * The request of a route whose schema is S, with body, params, querystring and headers typed from
 * its zod schemas by the type provider: what a named handler (or a preHandler) takes, so no route
 * casts `request.body`.
 */
export type ZodRequest<S extends FastifySchema> = FastifyRequest<RouteGenericInterface, RawServerDefault, RawRequestDefaultExpression, S, ZodTypeProvider>;
