/**
 * GET /health (liveness: the process answers) and GET /health/ready (PostgreSQL and Temporal answer,
 * from a status this process refreshes at most once a second: api/health/readiness.ts).
 * Neither is rate-limited (api/plugins/rateLimit.ts). A failing readiness check names the dependency
 * ("postgres", "temporal") but never its raw error, which may carry hosts or credentials: that goes
 * to the log only.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { Readiness } from '../health/readiness.js';
import { errorResponses } from '../schemas/common.js';

const checkSchema = z.object({ ok: z.boolean() });

const healthRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const readiness = new Readiness(ctx, app.log);
  app.get(
    '/health',
    { schema: { tags: ['health'], summary: 'Liveness', response: { 200: z.object({ status: z.literal('ok'), version: z.string(), uptimeSeconds: z.number() }) } } },
    async () => ({ status: 'ok' as const, version: '0.13.0', uptimeSeconds: Math.round(process.uptime()) }),
  );

  app.get(
    '/health/ready',
    {
      schema: {
        tags: ['health'],
        summary: 'Readiness: PostgreSQL and Temporal reachable (a status at most 1 s old, refreshed by one check at a time)',
        response: { 200: z.object({ status: z.literal('ready'), checks: z.record(z.string(), checkSchema) }), ...errorResponses(503) },
      },
    },
    async () => {
      const checks = await readiness.status();
      const failing = Object.entries(checks).filter(([, c]) => !c.ok);
      if (failing.length) {
        const names = failing.map(([n]) => n).join(', ');
        throw new ApiError('service_unavailable', `Not ready: ${names} unavailable`, { hint: `Retry after 30 seconds; failing: ${names}` });
      }
      return { status: 'ready' as const, checks };
    },
  );
};

export default healthRoutes;
