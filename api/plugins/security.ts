/** Security headers and CORS for every route. */
import Fastify, { type FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import cors from '@fastify/cors';

/** Headers of a normal answer that are not security headers. */
const NOT_SECURITY = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive']);

/**
 * The headers @fastify/helmet sets with these options, computed once. The plugin itself rebuilds
 * helmet's middleware (parsing the CSP directives) on every request; the headers are the same for
 * every answer, so the hot path only copies them (issue 8, "keep the plugin chain cheap").
 */
async function securityHeaders(options: FastifyHelmetOptions): Promise<Record<string, string>> {
  const probe = Fastify({ logger: false });
  await probe.register(helmet, options);
  probe.get('/', async () => ({}));
  const res = await probe.inject('/');
  await probe.close();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (!NOT_SECURITY.has(k.toLowerCase()) && v !== undefined) out[k] = String(v);
  return out;
}

export default fp(async function securityPlugin(app: FastifyInstance, opts: { corsOrigins: string }) {
  const headers = await securityHeaders({
    // The API reference page at /docs loads its own scripts and styles from this origin.
    contentSecurityPolicy: {
      directives: {
        defaultSrc: ["'self'"],
        scriptSrc: ["'self'", "'unsafe-inline'"],
        styleSrc: ["'self'", "'unsafe-inline'"],
        imgSrc: ["'self'", 'data:', 'https:'],
      },
    },
    crossOriginResourcePolicy: { policy: 'cross-origin' },
  });
  app.addHook('onRequest', (_request, reply, done) => {
    reply.headers(headers);
    done();
  });
  const origins = opts.corsOrigins === '*' ? true : opts.corsOrigins.split(',').map((o) => o.trim());
  await app.register(cors, {
    origin: origins,
    // The preflight is not answered inside CORS's onRequest hook but by its OPTIONS route, so the
    // rate limit (a later onRequest hook) counts it and sets X-RateLimit-* on it like on any answer.
    preflightContinue: true,
    // An OPTIONS request without Origin gets an ordinary answer, not a text/plain 400.
    strictPreflight: false,
    // Browsers may reuse a preflight for 10 minutes instead of sending one per call.
    maxAge: 600,
    exposedHeaders: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'PAYMENT-REQUIRED', 'PAYMENT-RESPONSE', 'X-Request-Id'],
  });
});
