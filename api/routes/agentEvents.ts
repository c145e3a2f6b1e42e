/**
 * GET /agents/{did}/events (issue 28; DESIGN.md section 12 "Events out"): a DID's own events after
 * its cursor, oldest first, for agents without a public URL. DID-signed by that DID. With wait > 0
 * and nothing yet, the request waits (long-poll, up to 30 s) until NOTIFY wakes it (api/events/waiters.ts).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { errorResponses } from '../schemas/common.js';
import { agentEventsParams, agentEventsQuery, agentEventsResponse } from '../schemas/events.js';

const agentEventsRoutes: FastifyPluginAsyncZod = async (app) => {
  app.get(
    '/agents/:did/events',
    {
      preHandler: app.signedRequest((request) => (request.params as { did: string }).did),
      schema: {
        tags: ['agents'],
        summary: "The DID's own events after a cursor, oldest first; waits up to `wait` seconds for the first (DID-signed by that DID)",
        description:
          'The same bodies webhooks deliver. Send the answer\'s `next` as `after` to follow. With `wait` (<= 30) and no event yet the request is held until one is recorded or the time is up (then `events` is empty). ' +
          'Audience: a task\'s events reach its poster and claimer, passport and payment events their owner, a2a.message_received its recipient.',
        params: agentEventsParams,
        querystring: agentEventsQuery,
        response: { 200: agentEventsResponse, ...errorResponses(400, 401, 403, 429, 503) },
      },
    },
    async (request, reply) => {
      const { did } = request.params;
      const { after, wait, limit } = request.query;
      const gone = new AbortController();
      const onClose = () => gone.abort();
      // the response's close before we answer is the client going away
      reply.raw.once('close', onClose);
      try {
        const events = await app.events.pull(did, after?.toLowerCase() ?? null, limit, wait * 1000, gone.signal);
        return { events, next: events.at(-1)?.id ?? after ?? null };
      } finally {
        reply.raw.off('close', onClose);
      }
    },
  );
};

export default agentEventsRoutes;
