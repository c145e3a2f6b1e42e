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
 * Every request that is not exempt counts against its IP's window first (issue 26 item 6): one over it
 * gets its 429 before any credential is looked up (a registry key's lookup is a PostgreSQL query), so
 * keys registered from one address never lift that address's limit. The keyed free tier (SPEC 2 trust
 * ladder, DESIGN.md section 10): a request within its IP's window whose Bearer credential
 * `keyed.identify` recognises (a registry key or its OAuth access token) also counts against that
 * registration's own window (`keyed.max` per `keyed.timeWindowMs`), which bounds one key across
 * addresses. X-RateLimit-* then describe the window with fewer requests remaining (the IP's on a tie);
 * a 429 describes the window that refused. A credential identify refuses (unknown, malformed,
 * revoked) is answered with its 401 after the IP's count: never silently the anonymous quota. Exempt
 * requests are not identified.
 *
 * Counting is @fastify/rate-limit's: its stores (an LRU of fixed windows in memory; an atomic Lua
 * INCR/PEXPIRE per key in Redis). The hook around them is ours, callback-style, because the plugin's
 * own hook costs about 2 µs per request on the hot reads (an async chain resolving its options per
 * request; issue 8, "keep the plugin chain cheap"). X-RateLimit-Reset is a Unix timestamp (SPEC 8).
 *
 * When Redis fails (down, timing out), each instance counts in its own memory until Redis answers
 * again, and says so in the log once a minute: the limit holds per instance instead of the API
 * answering 500 or nothing.
 */
import { createRequire } from 'node:module';
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify';
import fp from 'fastify-plugin';
import { normalizeIP } from '@fastify/rate-limit';
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
  /** Addresses the memory store remembers (least recently seen forgotten first). */
  cacheSize?: number;
}

/** Probes a load balancer or orchestrator sends; never limited. */
export const PROBE_ROUTES: ReadonlySet<string> = new Set(['/health', '/health/ready']);

/** Redis keys: the namespace the counters always had. */
const NAMESPACE = 'agent-passport-rl-';
/** Rate-limit keys of keyed requests (registration ids) start with this; IP keys never do. */
const KEYED_PREFIX = 'key:';
const STORE_FAILURE_LOG_EVERY_MS = 60_000;

/** What @fastify/rate-limit's stores answer: the count in the window and the ms left in it. */
interface WindowCount {
  current: number;
  ttl: number;
}
/** One window's count after this request: an IP's, or a registration's (keyed). */
interface CountedWindow extends WindowCount {
  max: number;
  windowMs: number;
  keyed: boolean;
}
interface WindowStore {
  incr(key: string, cb: (err: Error | null, res: WindowCount | null) => void, timeWindowMs: number, max: number): void;
}
type LocalStoreClass = new (continueExceeding: boolean, exponentialBackoff: boolean, cache?: number) => WindowStore;
type RedisStoreClass = new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => WindowStore;

// The plugin's stores are CommonJS files without typings of their own.
const require = createRequire(import.meta.url);
const LocalStore = require('@fastify/rate-limit/store/LocalStore.js') as LocalStoreClass;
const RedisStore = require('@fastify/rate-limit/store/RedisStore.js') as RedisStoreClass;

declare module 'fastify' {
  interface FastifyInstance {
    /** Counts a request that never reached routing (malformed URL); rejects with the 429 ApiError when over. */
    limitBadUrl(request: FastifyRequest, reply: FastifyReply): Promise<void>;
  }
}

/** "1 second", "42 seconds", "1 minute", "2 minutes": how long until the window resets. */
function duration(seconds: number): string {
  if (seconds >= 60 && seconds % 60 === 0) return seconds === 60 ? '1 minute' : `${seconds / 60} minutes`;
  return seconds === 1 ? '1 second' : `${seconds} seconds`;
}

export default fp(async function rateLimitPlugin(app: FastifyInstance, opts: RateLimitOptions) {
  const { exempt, keyed } = opts;
  const memory = new LocalStore(false, false, opts.cacheSize ?? 50_000);
  const shared = opts.redis ? new RedisStore(false, false, opts.redis, NAMESPACE) : undefined;
  let lastStoreFailureLog = 0;

  /** Counts one request against `key`'s window in Redis, in memory while Redis fails. */
  function increment(key: string, windowMs: number, max: number, cb: (res: WindowCount) => void): void {
    if (!shared) return memory.incr(key, (_err, res) => cb(res!), windowMs, max);
    shared.incr(
      key,
      (err, res) => {
        if (!err && res) return cb(res);
        const now = Date.now();
        if (now - lastStoreFailureLog >= STORE_FAILURE_LOG_EVERY_MS) {
          lastStoreFailureLog = now;
          app.log.warn({ err }, 'rate limit: Redis failed, counting in this instance until it answers');
        }
        memory.incr(key, (_e, local) => cb(local!), windowMs, max);
      },
      windowMs,
      max,
    );
  }

  /** Counts one request against a window: the IP's (registration null) or a registration's. */
  function countIn(request: FastifyRequest, registration: string | null, cb: (w: CountedWindow) => void): void {
    const max = registration && keyed ? keyed.max : opts.max;
    const windowMs = registration && keyed ? keyed.timeWindowMs : opts.timeWindowMs;
    const key = registration ? `${KEYED_PREFIX}${registration}` : normalizeIP(request.ip);
    increment(key, windowMs, max, (res) => cb({ ...res, max, windowMs, keyed: registration !== null }));
  }

  const remaining = (w: CountedWindow) => Math.max(0, w.max - w.current);

  /** X-RateLimit-* of one window (SPEC 8: the reset as a Unix timestamp). */
  function describe(reply: FastifyReply, w: CountedWindow): number {
    const seconds = Math.ceil(w.ttl / 1000);
    reply.header('x-ratelimit-limit', w.max);
    reply.header('x-ratelimit-remaining', remaining(w));
    reply.header('x-ratelimit-reset', Math.ceil(Date.now() / 1000) + seconds);
    return seconds;
  }

  /** True (and `done` called with the 429) when the request is over this window's limit. */
  function refused(reply: FastifyReply, w: CountedWindow, done: HookHandlerDoneFunction): boolean {
    if (w.current <= w.max) return false;
    const seconds = describe(reply, w);
    reply.header('retry-after', seconds);
    done(
      new ApiError('rate_limit_exceeded', `Rate limit exceeded: ${w.max} requests per ${Math.round(w.windowMs / 1000)} s${w.keyed ? ' for this key' : ''}`, {
        hint: `Retry after ${duration(seconds)}, when X-RateLimit-Reset is reached`,
      }),
    );
    return true;
  }

  function limit(request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction): void {
    if (exempt?.(request)) return done();
    countIn(request, null, (ip) => {
      if (refused(reply, ip, done)) return; // over its address's limit: no credential is looked up
      // no credential (the common case): the address's window is the only one
      if (!keyed || request.headers.authorization === undefined) {
        describe(reply, ip);
        return done();
      }
      keyed.identify(request).then(
        (registration) => {
          if (registration === null) {
            describe(reply, ip);
            return done();
          }
          countIn(request, registration, (key) => {
            if (refused(reply, key, done)) return;
            describe(reply, remaining(key) < remaining(ip) ? key : ip); // the tighter of the two
            done();
          });
        },
        (refusal: unknown) => {
          describe(reply, ip); // counted against the IP, then answered
          done(refusal as Error);
        },
      );
    });
  }

  app.addHook('onRequest', limit);
  app.decorate('limitBadUrl', (request: FastifyRequest, reply: FastifyReply) => new Promise<void>((resolve, reject) => limit(request, reply, (err) => (err ? reject(err) : resolve()))));
});
