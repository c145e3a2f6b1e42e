/**
 * Builds the fastify app. Used by server.ts and by tests (inject or real HTTP). Route groups are
 * plugins that receive the AppContext; the order matters only for openapi (before the routes, so it
 * sees their schemas) and the error handler.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance } from 'fastify';
import { serializerCompiler, validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import type { AppContext } from './context.js';
import errorHandler from './plugins/errorHandler.js';
import rateLimitPlugin from './plugins/rateLimit.js';
import securityPlugin from './plugins/security.js';
import openapiPlugin from './plugins/openapi.js';
import metaRoutes from './routes/meta.js';
import healthRoutes from './routes/health.js';
import codecRoutes from './routes/codec.js';
import authRoutes from './routes/auth.js';
import signedRequestPlugin from './plugins/signedRequest.js';
import x402Plugin from './plugins/x402.js';
import { x402NetworkId } from '../ledger/x402/network.js';
import eventsRoutes from './routes/events.js';
import agentCardRoutes from './routes/agentCard.js';
import passportRoutes from './routes/passports.js';
import didRoutes from './routes/did.js';
import auditRoutes from './routes/audit.js';
import adminRoutes from './routes/admin.js';
import x402InfoRoutes from './routes/x402Info.js';

export const BODY_LIMIT_BYTES = 1024 * 1024;

/** Paths whose values must never reach a log line (DESIGN.md section 8). */
export const REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-service-signature"]',
  'req.headers["payment-signature"]',
  'req.headers["x-payment"]',
  'req.body.privateKey',
  'req.body.senderPrivateKey',
  'req.body.posterPrivateKey',
  'req.body.claimerPrivateKey',
  '*.privateKey',
  '*.senderPrivateKey',
  '*.posterPrivateKey',
  '*.claimerPrivateKey',
  '*.api_key',
  '*.adminToken',
];

export interface BuildAppOptions {
  logger?: boolean | object;
}

export async function buildApp(ctx: AppContext, opts: BuildAppOptions = {}): Promise<FastifyInstance> {
  const logger =
    opts.logger === false
      ? false
      : { level: ctx.config.LOG_LEVEL, redact: { paths: REDACT_PATHS, censor: '[redacted]' }, ...(typeof opts.logger === 'object' ? opts.logger : {}) };

  const app = Fastify({
    logger,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: ctx.config.TRUST_PROXY,
    requestIdHeader: 'x-request-id',
    genReqId: () => randomUUID(),
    return503OnClosing: true,
    routerOptions: { ignoreTrailingSlash: true },
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);
  app.addHook('onRequest', async (request, reply) => {
    reply.header('x-request-id', request.id);
  });

  await app.register(errorHandler, { bodyLimit: BODY_LIMIT_BYTES });
  await app.register(securityPlugin, { corsOrigins: ctx.config.CORS_ORIGINS });
  await app.register(rateLimitPlugin, { max: ctx.config.RATE_LIMIT_MAX, timeWindowMs: ctx.config.RATE_LIMIT_WINDOW_MS, redis: ctx.redis });
  await app.register(openapiPlugin, { publicBaseUrl: ctx.config.PUBLIC_BASE_URL });

  await app.register(healthRoutes, { ctx });
  await app.register(metaRoutes, { ctx });
  await app.register(codecRoutes, { ctx });

  // Groups below need PostgreSQL and the ledger; without them (unit-style tests) they are absent.
  const { sql, ledger } = ctx;
  if (sql && ledger) {
    await app.register(signedRequestPlugin, { sql, keys: ledger.keys, network: ledger.deployment.network });
    await app.register(authRoutes, { sql, network: ledger.deployment.network });
    if (ledger.deployment.facilitatorUrl) {
      await app.register(x402Plugin, {
        sql,
        facilitatorUrl: ledger.deployment.facilitatorUrl,
        network: x402NetworkId(ledger.deployment.network),
        publicBaseUrl: ctx.config.PUBLIC_BASE_URL,
      });
    }
    // passports, DIDs, audit, admin revoke, x402 discovery (issue 4)
    await app.register(passportRoutes, { ctx });
    await app.register(didRoutes, { ctx });
    await app.register(auditRoutes, { ctx });
    await app.register(adminRoutes, { ctx });
    await app.register(x402InfoRoutes, { ctx });
  }
  await app.register(eventsRoutes, { ctx });
  await app.register(agentCardRoutes, { ctx });

  return app;
}
