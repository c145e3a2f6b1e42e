/**
 * GET /health (liveness: the process answers) and GET /health/ready (PostgreSQL and Temporal answer).
 * Neither is rate-limited (api/plugins/rateLimit.ts). A failing readiness check names the dependency
 * ("postgres", "temporal") but never its raw error, which may carry hosts or credentials: that goes
 * to the log only, with the request id.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { errorResponses } from '../schemas/common.js';

const CHECK_TIMEOUT_MS = 2_000;

async function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const checkSchema = z.object({ ok: z.boolean() });

const healthRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
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
        summary: 'Readiness: PostgreSQL and Temporal reachable',
        response: { 200: z.object({ status: z.literal('ready'), checks: z.record(z.string(), checkSchema) }), ...errorResponses(503) },
      },
    },
    async (request) => {
      const checks: Record<string, { ok: boolean }> = {};
      const run = async (name: string, fn: () => Promise<unknown>) => {
        try {
          await withTimeout(fn(), CHECK_TIMEOUT_MS);
          checks[name] = { ok: true };
        } catch (err) {
          checks[name] = { ok: false };
          request.log.warn({ dependency: name, err }, 'readiness check failed');
        }
      };
      await Promise.all([
        run('postgres', async () => {
          if (!ctx.sql) throw new Error('not configured');
          await ctx.sql`select 1`;
        }),
        run('temporal', async () => {
          if (!ctx.temporal) throw new Error('not configured');
          const client = await ctx.temporal();
          await client.workflowService.getSystemInfo({});
        }),
      ]);
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
