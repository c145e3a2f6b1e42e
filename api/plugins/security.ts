/**
 * Security headers and CORS for every answer, at the cost of one hook (issue 8, "keep the plugin
 * chain cheap").
 *
 * Two sets of security headers (docs/decisions.md, "Hardening and the fast path"):
 * - API answers (JSON, XML, text: everything a browser does not render as a page) carry the set the
 *   OWASP REST Security Cheat Sheet names for APIs: `Content-Security-Policy: default-src 'none';
 *   frame-ancestors 'none'`, `X-Frame-Options: DENY`, `X-Content-Type-Options: nosniff`,
 *   `Strict-Transport-Security`. The rest of helmet's set only means something in a rendered
 *   document (Referrer-Policy, COOP, Origin-Agent-Cluster, DNS prefetch, IE8's X-Download-Options,
 *   Flash's cross-domain policies, X-XSS-Protection: 0) or restates the default for a cross-origin
 *   API (`Cross-Origin-Resource-Policy: cross-origin`; browsers read it through CORS). Each header
 *   costs every answer: 10 one-byte headers cost bare Fastify about 2 µs per request here.
 * - Routes that answer HTML pages (a schema that `produces` text/html, `config: { document: true }`,
 *   the /docs reference) carry @fastify/helmet's whole document set, with a CSP that lets /docs load
 *   its own scripts and styles; a route-level hook attached when the route is registered adds them,
 *   so API routes never pay for them.
 */
import Fastify, { type FastifyInstance, type onRequestHookHandler } from 'fastify';
import fp from 'fastify-plugin';
import helmet, { type FastifyHelmetOptions } from '@fastify/helmet';
import cors, { type FastifyCorsOptions } from '@fastify/cors';

declare module 'fastify' {
  interface FastifyContextConfig {
    /** The route may answer an HTML page: it gets the document security headers. */
    document?: boolean;
  }
}

/** Headers of a normal answer that are not security headers. */
const NOT_SECURITY = new Set(['content-type', 'content-length', 'date', 'connection', 'keep-alive']);

/** Security headers of API answers (see the module comment). */
export const API_SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': "default-src 'none'; frame-ancestors 'none'",
  'strict-transport-security': 'max-age=31536000; includeSubDomains',
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
};

/**
 * The headers @fastify/helmet sets with these options, computed once. The plugin itself rebuilds
 * helmet's middleware (parsing the CSP directives) on every request; the headers are the same for
 * every answer, so the hot path only copies them.
 */
async function helmetHeaders(options: FastifyHelmetOptions): Promise<Record<string, string>> {
  const probe = Fastify({ logger: false });
  await probe.register(helmet, options);
  probe.get('/', async () => ({}));
  const res = await probe.inject('/');
  await probe.close();
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(res.headers)) if (!NOT_SECURITY.has(k.toLowerCase()) && v !== undefined) out[k] = String(v);
  return out;
}

/** Whether a route may answer an HTML page, from its options at registration. */
function answersDocuments(route: { url: string; schema?: unknown; config?: { document?: boolean } }): boolean {
  if (route.config?.document) return true;
  if (route.url === '/docs' || route.url.startsWith('/docs/')) return true;
  const produces = (route.schema as { produces?: unknown } | undefined)?.produces;
  return Array.isArray(produces) && produces.includes('text/html');
}

export default fp(async function securityPlugin(app: FastifyInstance, opts: { corsOrigins: string }) {
  const documentHeaders = await helmetHeaders({
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
  // One hook, one reply.headers() call for the headers every answer carries: before, helmet's copy
  // and @fastify/cors's hook (which spreads its options and resolves the origin through callbacks
  // per request) ran one after the other. The request id is written here too (one hook less).
  const block = { ...API_SECURITY_HEADERS, ...corsStatic.always };
  const forOrigin = corsStatic.forOrigin;
  app.addHook('onRequest', (request, reply, done) => {
    reply.headers(block);
    reply.header('x-request-id', request.id);
    const origin = request.headers.origin;
    if (origin !== undefined) reply.headers(forOrigin(origin));
    done();
  });
  // Page routes: helmet's document set replaces the API set (same names are overwritten).
  const addDocumentHeaders: onRequestHookHandler = (_request, reply, done) => {
    reply.headers(documentHeaders);
    done();
  };
  app.addHook('onRoute', (route) => {
    if (!answersDocuments(route)) return;
    const own = route.onRequest;
    route.onRequest = own === undefined ? [addDocumentHeaders] : [...(Array.isArray(own) ? own : [own]), addDocumentHeaders];
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
 * The CORS headers of a non-preflight answer. A request with an Origin (a browser's) gets what
 * @fastify/cors 11 gives with these options: `Access-Control-Expose-Headers`, and
 * `Access-Control-Allow-Origin` echoing an allowed Origin (any with `true`, a listed one otherwise),
 * or '*' when the list holds '*'. A request without Origin (agents, servers, curl) is not a CORS
 * request, so it gets only `Vary: Origin`, which every answer carries: a cache must not hand an
 * answer made for one kind of request to the other (docs/decisions.md, "Hardening and the fast path").
 */
function corsHeaders(origins: CorsOrigins): { always: Record<string, string>; forOrigin(origin: string): Record<string, string> } {
  const expose = { 'access-control-expose-headers': EXPOSED_HEADERS.join(', ') };
  const always = { vary: 'Origin' };
  if (origins !== true && origins.includes('*')) {
    const star = { ...expose, 'access-control-allow-origin': '*' };
    return { always, forOrigin: () => star };
  }
  const listed = origins === true ? undefined : new Set(origins);
  return { always, forOrigin: (origin) => (listed && !listed.has(origin) ? expose : { ...expose, 'access-control-allow-origin': origin }) };
}
