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
 * @fastify/rate-limit reports the reset as seconds from now; the spec wants a Unix timestamp, so
 * the hook rewrites that header right after the limiter set it.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import { ApiError } from '../errors.js';

export interface RateLimitOptions {
  max: number;
  timeWindowMs: number;
  redis?: Redis;
  /** Requests that are neither limited nor counted. */
  exempt?: (request: FastifyRequest) => boolean;
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

export default fp(async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions) {
  const exempt = opts.exempt;
  await app.register(rateLimit, {
    global: false,
    max: opts.max,
    timeWindow: opts.timeWindowMs,
    redis: opts.redis,
    nameSpace: 'agent-passport-rl-',
    allowList: exempt ? (request) => exempt(request) : undefined,
    addHeadersOnExceeding: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true },
    addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
    errorResponseBuilder: (_request, context) =>
      new ApiError('rate_limit_exceeded', `Rate limit exceeded: ${context.max} requests per ${Math.round(opts.timeWindowMs / 1000)} s`, {
        hint: `Retry after ${context.after}, when X-RateLimit-Reset is reached`,
      }),
  });

  const limiter = app.rateLimit();
  const limit = async (request: FastifyRequest, reply: FastifyReply) => {
    try {
      await limiter.call(app, request, reply);
    } finally {
      absoluteReset(reply);
    }
  };
  app.addHook('onRequest', limit);
  app.decorate('limitBadUrl', limit);
});
