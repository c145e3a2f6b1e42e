/**
 * Builds the fastify app. Used by server.ts and by tests (inject or real HTTP). Route groups are
 * plugins that receive the AppContext; the order matters only for openapi (before the routes, so it
 * sees their schemas) and the error handler.
 */
import { randomUUID } from 'node:crypto';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { validatorCompiler, type ZodTypeProvider } from 'fastify-type-provider-zod';
import { compiledSerializerCompiler } from './serializer.js';
import { publicBase, type AppContext } from './context.js';
import errorHandler, { answerFrameworkError } from './plugins/errorHandler.js';
import rateLimitPlugin from './plugins/rateLimit.js';
import textInputPlugin from './plugins/textInput.js';
import securityPlugin from './plugins/security.js';
import openapiPlugin from './plugins/openapi.js';
import metaRoutes from './routes/meta.js';
import healthRoutes from './routes/health.js';
import codecRoutes from './routes/codec.js';
import authRoutes from './routes/auth.js';
import signedRequestPlugin from './plugins/signedRequest.js';
import x402Plugin from './plugins/x402.js';
import { x402NetworkId } from '@agent-passport/core/x402/network';
import eventsRoutes from './routes/events.js';
import rulesRoutes from './routes/rules.js';
import wellKnownRoutes from './routes/wellKnown.js';
import trustSnapshotRoutes from './routes/trust/snapshot.js';
import agentCardRoutes from './routes/agentCard.js';
import passportRoutes from './routes/passports.js';
import passportsFeature from './passports/state.js';
import didRoutes from './routes/did.js';
import auditRoutes from './routes/audit.js';
import adminRoutes from './routes/admin.js';
import x402InfoRoutes from './routes/x402Info.js';
import a2aRoutes from './routes/a2a.js';
import agentsRoutes from './routes/agents/index.js';
import { installAgentDirectory } from './agents/directory.js';
import marketRoutes from './routes/market/index.js';
import { marketFeature } from './market/state.js';
import trustOwnershipRoutes from './routes/trust/ownership.js';
import trustAttestRoutes from './routes/trust/attest.js';
import { PROBE_ROUTES } from './plugins/rateLimit.js';
import { codecTrusts } from './routes/codec.js';
import { redactDeep } from './logRedaction.js';
import { ApiError } from './errors.js';
import registryRoutes from './routes/registry/index.js';
import oauthRoutes from './routes/oauth.js';
import discoveryRoutes from './routes/discovery.js';
import searchRoutes from './routes/search.js';
import feedRoutes from './routes/feed.js';
import contentRoutes from './routes/content.js';
import { registryClientsFor } from './registry/clients.js';
import mcpRoutes from './routes/mcp.js';
import { AccessLog, lazyChildLogger } from './requestLogger.js';
import { initialWorkflowSettings } from './workflowSettings.js';
import { installTrustSnapshots } from './trust/snapshots.js';
import metricsPlugin from './plugins/metrics.js';
import tracingPlugin from './plugins/tracing.js';
import { tracingEnabled } from '../telemetry/spans.js';
import eventWaiters from './events/waiters.js';
import agentEventsRoutes from './routes/agentEvents.js';
import webhookSubscriptions from './webhooks/subscriptions.js';
import webhookRoutes from './routes/webhooks.js';

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
  '*.client_secret',
  '*.access_token',
  '*.adminToken',
];

/** A client's x-request-id is kept only when it is a short token; otherwise a fresh id is made. */
export const CLIENT_REQUEST_ID = /^[A-Za-z0-9._-]{1,64}$/;

declare module 'fastify' {
  interface FastifyInstance {
    /** From now on every request answers 503 service_unavailable (graceful shutdown). */
    markClosing(): void;
  }
}

export interface BuildAppOptions {
  logger?: boolean | object;
}

/**
 * Whether a request is outside the rate limit: only when the route matched is a probe or a codec
 * route. Runs on every request: the raw path is looked at first, since request.routeOptions builds
 * an object per access.
 */
function rateLimitExempt(ctx: AppContext, request: FastifyRequest): boolean {
  const path = request.url;
  if (path.startsWith('/health')) {
    const url = request.routeOptions.url;
    return url !== undefined && PROBE_ROUTES.has(url);
  }
  if (!path.startsWith('/codec/')) return false;
  // The codec's own routes, and the browser's preflights for them (routed to CORS's OPTIONS *).
  const codec = request.routeOptions.url?.startsWith('/codec/') || request.method === 'OPTIONS';
  return codec && codecTrusts(ctx.config, request);
}

export async function buildApp(ctx: AppContext, opts: BuildAppOptions = {}): Promise<FastifyInstance> {
  const logger =
    opts.logger === false
      ? false
      : {
          level: ctx.config.LOG_LEVEL,
          redact: { paths: REDACT_PATHS, censor: '[redacted]' },
          formatters: { log: (obj: Record<string, unknown>) => redactDeep(obj) },
          ...(typeof opts.logger === 'object' ? opts.logger : {}),
        };

  const app = Fastify({
    logger,
    bodyLimit: BODY_LIMIT_BYTES,
    trustProxy: ctx.config.TRUST_PROXY,
    requestIdHeader: false,
    genReqId: (req) => {
      const id = req.headers['x-request-id'];
      return typeof id === 'string' && CLIENT_REQUEST_ID.test(id) ? id : randomUUID();
    },
    // Answered by the onRequest hook below, in the error schema.
    return503OnClosing: false,
    // Malformed percent-encoding in the path, over-long path parameters: 400 in the error schema.
    frameworkErrors: (error, request, reply) => answerFrameworkError(request.server, error, request, reply, ctx.config.PUBLIC_BASE_URL),
    routerOptions: { ignoreTrailingSlash: true },
    // One access line per answer instead of two per request; successes at debug unless slow (api/requestLogger.ts).
    logController: new AccessLog(ctx.config.ACCESS_LOG_SLOW_MS),
    // A request's pino child is made only when it logs something (api/requestLogger.ts).
    ...(logger === false ? {} : { childLoggerFactory: lazyChildLogger }),
  }).withTypeProvider<ZodTypeProvider>();

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(compiledSerializerCompiler); // zod schemas compiled once to fast-json-stringify
  let closing = false;
  app.decorate('markClosing', () => {
    closing = true;
  });
  app.addHook('preClose', async () => {
    closing = true;
  });
  // how the routes of every feature but the marketplace run workflows (waits, timings, id scope)
  app.decorate('workflowSettings', initialWorkflowSettings(ctx.config));
  // While closing, answers also close their connection, so keep-alive sockets do not hold the close.
  // Hooks on every request are callback-style (no promise per request: the fast path, issue 8).
  app.addHook('onSend', (_request, reply, payload, done) => {
    if (closing) reply.header('connection', 'close');
    done(null, payload);
  });

  // operators' telemetry (issue 30), before every hook and route: a request span while tracing runs
  // (OTLP endpoint set), RED metrics per route template while this process serves METRICS_PORT
  if (tracingEnabled()) await app.register(tracingPlugin);
  if (ctx.config.METRICS_PORT !== undefined) await app.register(metricsPlugin);
  await app.register(errorHandler, { bodyLimit: BODY_LIMIT_BYTES, publicBaseUrl: ctx.config.PUBLIC_BASE_URL });
  // security headers, CORS and x-request-id on every answer (the 503 below included)
  await app.register(securityPlugin, { corsOrigins: ctx.config.CORS_ORIGINS });
  app.addHook('onRequest', (_request, reply, done) => {
    if (!closing) return done();
    reply.header('connection', 'close');
    done(new ApiError('service_unavailable', 'The server is shutting down', { hint: 'Retry after 30 seconds (another instance may answer sooner)' }));
  });
  // registry keys and their OAuth tokens (issue 12): who a Bearer credential names, for the keyed rate limit and /api/v1/agents/me
  const registryClients = ctx.sql ? registryClientsFor(app, { sql: ctx.sql, config: ctx.config, issuerOf: (request) => publicBase(ctx, request) }) : undefined;
  await app.register(rateLimitPlugin, {
    max: ctx.config.RATE_LIMIT_MAX,
    timeWindowMs: ctx.config.RATE_LIMIT_WINDOW_MS,
    redis: ctx.redis,
    keyed: registryClients && {
      max: ctx.config.REGISTRY_KEY_RATE_LIMIT_MAX,
      timeWindowMs: ctx.config.REGISTRY_KEY_RATE_LIMIT_WINDOW_MS,
      identify: async (request) => (await registryClients.identify(request))?.id ?? null,
    },
    exempt: (request) => rateLimitExempt(ctx, request),
  });
  // a NUL, bytes that are not UTF-8 or a lone surrogate in the URL or the body: 400, after the count above
  await app.register(textInputPlugin);
  await app.register(openapiPlugin, { publicBaseUrl: ctx.config.PUBLIC_BASE_URL });

  await app.register(healthRoutes, { ctx });
  await app.register(metaRoutes, { ctx });
  await app.register(codecRoutes, { ctx });
  // the trust snapshots (one cache, one signing key): GET /api/trust/{domain}, attest, the signature directory
  installTrustSnapshots(app, ctx);

  // Groups below need PostgreSQL and the ledger; without them (unit-style tests) they are absent.
  const { sql, ledger } = ctx;
  if (sql && ledger) {
    await app.register(signedRequestPlugin, { sql, keys: ledger.keys, network: ledger.deployment.network, publicBaseUrl: ctx.config.PUBLIC_BASE_URL });
    await app.register(authRoutes, { sql, network: ledger.deployment.network, sweepEveryMs: ctx.config.AUTH_CHALLENGE_SWEEP_MS, publicBaseUrl: ctx.config.PUBLIC_BASE_URL });
    if (ledger.deployment.facilitatorUrl) {
      await app.register(x402Plugin, {
        sql,
        facilitatorUrl: ledger.deployment.facilitatorUrl,
        network: x402NetworkId(ledger.deployment.network),
        publicBaseUrl: ctx.config.PUBLIC_BASE_URL,
      });
    }
    // passports, DIDs, audit, admin revoke, x402 discovery (issue 4)
    await app.register(passportsFeature, { ctx });
    await app.register(passportRoutes, { ctx });
    await app.register(didRoutes, { ctx });
    await app.register(auditRoutes, { ctx });
    await app.register(adminRoutes, { ctx });
    await app.register(x402InfoRoutes, { ctx });
    // A2A messaging over the a2a topic (issue 9)
    await app.register(a2aRoutes, { ctx });
    // agent directory and directory rebuild (issue 9); the directory in memory is read by search and the feed too
    installAgentDirectory(app, sql);
    await app.register(agentsRoutes, { ctx });
    // task marketplace with HBAR escrow (issue 10): app.market (api/market/) and its routes
    await app.register(marketFeature, { ctx });
    await app.register(marketRoutes, { ctx });
    // search and the RSS feed over the directory and the task book in memory (issue 12 part 2)
    await app.register(searchRoutes, { ctx });
    await app.register(feedRoutes, { ctx });
    // on-chain attestation of trust snapshots by passport holders (issue 11)
    await app.register(trustAttestRoutes, { ctx });
    // events out (issue 28): pull with long-poll (app.events)
    await app.register(eventWaiters, { sql });
    await app.register(agentEventsRoutes);
    // events out (issue 28): webhook subscriptions (app.webhooks), delivered by the webhookDelivery workflows
    await app.register(webhookSubscriptions, { ctx, sql });
    await app.register(webhookRoutes);
  }
  // domain ownership challenges (issue 11; verify-ownership is DID-signed since issue 20): PostgreSQL and the ledger's keys
  if (sql && ledger) await app.register(trustOwnershipRoutes, { ctx });
  await app.register(eventsRoutes, { ctx });
  await app.register(agentCardRoutes, { ctx });
  // trust snapshots, the rule catalog and the signature directory (issue 11); ownership from PostgreSQL when present
  await app.register(trustSnapshotRoutes, { ctx });
  await app.register(rulesRoutes, { ctx });
  await app.register(wellKnownRoutes, { ctx });
  // registry keys, OAuth client credentials and the discovery documents (issue 12 part 1)
  if (registryClients) {
    await app.register(registryRoutes, { ctx, clients: registryClients });
    await app.register(oauthRoutes, { ctx, clients: registryClients });
  }
  await app.register(discoveryRoutes, { ctx });
  // guides, content pages through one layout, /contact (issue 12 part 2)
  await app.register(contentRoutes, { ctx });
  // MCP over streamable HTTP, read-only tools (issue 14; the tool set is packages/client/src/mcpTools.ts)
  await app.register(mcpRoutes);

  return app;
}
