/**
 * OpenAPI 3.1 generated from the routes' zod schemas (/openapi.json) and an interactive reference
 * page (/docs). Registered before the routes so their schemas are collected.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import swagger from '@fastify/swagger';
import swaggerUi from '@fastify/swagger-ui';
import { jsonSchemaTransform, jsonSchemaTransformObject } from 'fastify-type-provider-zod';
import { applySecurityAndCommonAnswers } from './openapiSecurity.js';

export const API_VERSION = '0.13.0';

/** The Location header of every documented 202 request_pending answer (api/schemas/common.ts pendingBodySchema). */
export const PENDING_LOCATION_HEADER = {
  type: 'string',
  description: 'The URL to poll with GET until the outcome shows (relative to the API base, e.g. /market/tasks/{taskId})',
} as const;

/** Adds the Location header to a route's documented 202 answer. */
function withPendingLocation<T extends { schema: unknown }>(transformed: T): T {
  const response = (transformed.schema as { response?: Record<string, Record<string, unknown>> } | undefined)?.response;
  const pending = response?.['202'];
  if (pending) {
    pending.headers = { location: PENDING_LOCATION_HEADER };
    pending.description = 'request_pending: accepted and still running; poll the Location';
  }
  return transformed;
}

export default fp(async function openapiPlugin(app: FastifyInstance, opts: { publicBaseUrl?: string }) {
  await app.register(swagger, {
    openapi: {
      openapi: '3.1.0',
      info: {
        title: 'Agent Passport API',
        version: API_VERSION,
        description:
          'Identity passports (Hedera NFTs), DIDs, the agent directory, A2A messaging, the task marketplace, domain trust snapshots and registry keys. Errors are { error, code, retryable?, hint? } with codes from GET /api/meta/errors.',
      },
      // set per answer below: PUBLIC_BASE_URL, else the origin the document was fetched from
      servers: [],
      tags: [
        { name: 'meta', description: 'Catalogs and metadata' },
        { name: 'health', description: 'Liveness and readiness' },
        { name: 'passports', description: 'Passports, DIDs and audit' },
        { name: 'events', description: 'Indexed chain events' },
      ],
    },
    transform: (document) => withPendingLocation(jsonSchemaTransform(document)),
    // every operation's security requirement and the answers every route can give (issue 29 item 3)
    transformObject: (document) => applySecurityAndCommonAnswers(jsonSchemaTransformObject(document) as Record<string, any>) as ReturnType<typeof jsonSchemaTransformObject>,
  });
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { docExpansion: 'list', deepLinking: true } });
  app.get('/openapi.json', { schema: { hide: true } }, async (request) => {
    const base = (opts.publicBaseUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
    return { ...app.swagger(), servers: [{ url: base }] };
  });
});
