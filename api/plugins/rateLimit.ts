/**
 * 60 requests / 60 s / IP on every route (DESIGN.md section 6), counters in Redis when REDIS_URL is
 * set so every API instance shares them. @fastify/rate-limit reports the reset as seconds from now;
 * the spec wants a Unix timestamp, so onSend rewrites that one header.
 */
import type { FastifyInstance } from 'fastify';
import fp from 'fastify-plugin';
import rateLimit from '@fastify/rate-limit';
import type { Redis } from 'ioredis';
import { ApiError } from '../errors.js';

export interface RateLimitOptions {
  max: number;
  timeWindowMs: number;
  redis?: Redis;
}

const RESET = 'x-ratelimit-reset';

export default fp(async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions) {
  await app.register(rateLimit, {
    global: true,
    max: opts.max,
    timeWindow: opts.timeWindowMs,
    redis: opts.redis,
    nameSpace: 'agent-passport-rl-',
    addHeadersOnExceeding: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true },
    addHeaders: { 'x-ratelimit-limit': true, 'x-ratelimit-remaining': true, 'x-ratelimit-reset': true, 'retry-after': true },
    errorResponseBuilder: (_request, context) =>
      new ApiError('rate_limit_exceeded', `Rate limit exceeded: ${context.max} requests per ${Math.round(opts.timeWindowMs / 1000)} s`, {
        hint: `Retry after ${context.after}, when X-RateLimit-Reset is reached`,
      }),
  });

  app.addHook('onSend', async (_request, reply, payload) => {
    const secondsFromNow = Number(reply.getHeader(RESET));
    if (Number.isFinite(secondsFromNow)) {
      reply.header(RESET, Math.ceil(Date.now() / 1000) + secondsFromNow);
    }
    return payload;
  });
});
