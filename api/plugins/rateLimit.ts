/**
 * 60 requests / 60 s / IP (DESIGN.md section 6), counters in Redis when REDIS_URL is set so every
 * API instance shares them. One root onRequest hook, registered before CORS, so every answer is
 * counted and carries X-RateLimit-*: routes, 404s for unknown routes, CORS preflights, and (through
 * `limitBadUrl`) requests whose URL cannot even be decoded.
 *
 * Exceptions (documented in docs/decisions.md): the liveness and readiness probes are never
 * limited nor counted (a load balancer's probes share an address with its clients), and callers the
 * codec route trusts (operators; loopback in dev) are not limited on /codec/*, since the Temporal
 * UI calls it once per payload.
 *
 * The keyed free tier (SPEC 2 trust ladder, DESIGN.md section 10): a request whose Bearer credential
 * `keyed.identify` recognises (a registry key or its OAuth access token) is counted against that
 * registration's own window (`keyed.max` per `keyed.timeWindowMs`) instead of its IP's, with the same
 * headers. A credential identify refuses (unknown, malformed, revoked) is counted against the IP and
 * then answered with its 401: never silently the anonymous quota. Exempt requests are not identified.
 *
 * @fastify/rate-limit reports the reset as seconds from now; the spec wants a Unix timestamp, so
 * the hook rewrites that header right after the limiter set it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import rateLimit, { normalizeIP } from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import { ApiError } from '../errors.js';

export interface RateLimitOptions {
  max: number;
  timeWindowMs: number;
  redis?: Redis;
  /** Requests that are neither limited nor counted. */
  exempt?: (request: FastifyRequest) => boolean;
  /** the keyed free tier: identify returns the registration id of a valid credential, null for none, throws its 401 */
  keyed?: { max: number; timeWindowMs: number; identify(request: FastifyRequest): Promise<string | null> };
}

const RESET = 'x-ratelimit-reset';
/** Probes a load balancer or orchestrator sends; never limited. */
export const PROBE_ROUTES: ReadonlySet<string> = new Set(['/health', '/health/ready']);

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts a request that never reached routing (malformed URL); throws the 429 ApiError when over. */
    limitBadUrl(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

function absoluteReset(reply: FastifyReply): void {
  const value = reply.getHeader(RESET);
  const secondsFromNow = Number(value);
  // Values already above 1e9 are timestamps (the hook may run twice for one reply).
  if (value !== undefined && Number.isFinite(secondsFromNow) && secondsFromNow < 1e9) {
    reply.header(RESET, Math.ceil(Date.now() / 1000) + secondsFromNow);
  }
}

/** Rate-limit keys of keyed requests (registration ids) start with this; IP keys never do. */
const KEYED_PREFIX = 'key:';

export default fp(async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions) {
  const exempt = opts.exempt;
  const keyed = opts.keyed;
  const keyedIds = new WeakMap<FastifyRequest, string>();
  const isKeyed = (key: string | number) => typeof key === 'string' && key.startsWith(KEYED_PREFIX);
  await app.register(rateLimit, {
    global: false,
    max: opts.max,
    timeWindow: opts.timeWindowMs,
    redis: opts.redis,
    nameSpace: 'agent-passport-rl-',
    allowList: exempt ? (request) => exempt(request) : undefined,
    addHeadersOnExceeding: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true },
    addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
    errorResponseBuilder: (request, context) =>
      new ApiError('rate_limit_exceeded', `Rate limit exceeded: ${context.max} requests per ${Math.round((keyedIds.has(request) && keyed ? keyed.timeWindowMs : opts.timeWindowMs) / 1000)} s${keyedIds.has(request) ? ' for this key' : ''}`, {
        hint: `Retry after ${context.after}, when X-RateLimit-Reset is reached`,
      }),
  });

  const limiter = keyed
    ? app.rateLimit({
        keyGenerator: (request) => {
          const id = keyedIds.get(request);
          return id ? `${KEYED_PREFIX}${id}` : normalizeIP(request.ip);
        },
        max: (_request, key) => (isKeyed(key) ? keyed.max : opts.max),
        timeWindow: (_request, key) => (isKeyed(key) ? keyed.timeWindowMs : opts.timeWindowMs),
      })
    : app.rateLimit();
  const limit = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      await limiter.call(app, request, reply);
    } finally {
      absoluteReset(reply);
    }
  };
  const identifyThenLimit = async (request: FastifyRequest, reply: FastifyReply) => {
    // no credential (the common case): straight to the address's window
    if (!keyed || request.headers.authorization === undefined) return limit(request, reply);
    let refusal: unknown = null;
    if (!exempt?.(request)) {
      try {
        const id = await keyed.identify(request);
        if (id) keyedIds.set(request, id);
      } catch (err) {
        refusal = err; // counted against the IP first, then answered
      }
    }
    await limit(request, reply);
    if (refusal) throw refusal;
  };
  app.addHook('onRequest', identifyThenLimit);
  app.decorate('limitBadUrl', limit);
});
