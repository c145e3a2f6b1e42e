/** Security headers and CORS for every route. */
import Fastify, { type FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import cors, { type FastifyCorsOptions } from '@fastify/cors';

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
  const origins = opts.corsOrigins === '*' ? true : opts.corsOrigins.split(',').map((o) => o.trim());
  const corsStatic = corsHeaders(origins);
  // One hook, one reply.headers() call for the headers every answer carries (issue 8, "keep the
  // plugin chain cheap"): before, helmet's copy and @fastify/cors's hook (which spreads its options
  // and resolves the origin through callbacks per request) ran one after the other.
  const block = { ...headers, ...corsStatic.always };
  const allowOrigin = corsStatic.allowOrigin;
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(block);
    const origin = request.headers.origin;
    if (origin !== undefined && allowOrigin !== undefined && allowOrigin(origin)) reply.header('access-control-allow-origin', origin);
    done();
  });
  // @fastify/cors answers preflights: its OPTIONS * route and, in this encapsulated context, its hook
  // that runs for that route only (Access-Control-Allow-Methods/-Headers/-Max-Age; the headers above
  // are set again to the same values).
  await app.register(async (preflights) => {
    await preflights.register(cors, corsOptions(origins));
  });
});

type CorsOrigins = true | string[];

function corsOptions(origin: CorsOrigins): FastifyCorsOptions {
  return {
    origin,
    // The preflight is not answered inside CORS's onRequest hook but by its OPTIONS route, so the
    // rate limit (a root onRequest hook) counts it and sets X-RateLimit-* on it like on any answer.
    preflightContinue: true,
    // An OPTIONS request without Origin gets an ordinary answer, not a text/plain 400.
    strictPreflight: false,
    // Browsers may reuse a preflight for 10 minutes instead of sending one per call.
    maxAge: 600,
    exposedHeaders: EXPOSED_HEADERS,
  };
}

const EXPOSED_HEADERS = ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'PAYMENT-REQUIRED', 'PAYMENT-RESPONSE', 'X-Request-Id'];

/**
 * What @fastify/cors 11 adds to a non-preflight answer with these options, split into the part that
 * is the same for every answer and the origin check: `Access-Control-Expose-Headers`; `Vary: Origin`
 * unless the allowed origin is the literal '*'; `Access-Control-Allow-Origin` echoing an allowed
 * Origin (any with `true`, a listed one otherwise), or '*' on every answer when the list holds '*'.
 */
function corsHeaders(origins: CorsOrigins): { always: Record<string, string>; allowOrigin?: (origin: string) => boolean} {
  const expose = { 'access-control-expose-headers': EXPOSED_HEADERS.join(', ') };
  if (origins !== true && origins.includes('*')) return { always: { ...expose, 'access-control-allow-origin': '*' } };
  const listed = origins === true ? undefined : new Set(origins);
  return { always: { vary: 'Origin', ...expose }, allowOrigin: listed ? (origin) => listed.has(origin) : () => true };
}
