/**
 * RED metrics per route (issue 30): every answer is counted and timed in
 * agent_passport_http_request_duration_seconds{method, route, status} (telemetry/metrics.ts) under the
 * route's template as registered (/passport/:tokenId/:serial), never the concrete path; every request
 * no route matched is one series, route="unmatched". Every 429 also counts in
 * agent_passport_quota_refusals_total{code} by the error code of its body.
 *
 * The fast path (docs/benchmarks.md): each route gets its own onResponse hook when it is registered,
 * closing over its template and keeping the histogram's children per method and status, so an answer
 * costs a map lookup and an observe, never a label hash or `request.routeOptions` (an object per
 * access). Only requests no route matched go through the root hook's check. Registered before the
 * routes (api/app.ts), with fastify-plugin, so its onRoute hook sees every route.
 */
import fp from 'fastify-plugin';
import type { FastifyInstance, FastifyReply, FastifyRequest, onResponseHookHandler, onSendHookHandler } from 'fastify';
import { countQuotaRefusal, httpRequestDuration, UNMATCHED_ROUTE } from '../../telemetry/metrics.js';

type Observer = { observe(seconds: number): void };

/** The histogram's child per method and status of one route (created on first use: bounded by the route's methods and the statuses it answers). */
function routeObserver(route: string): (request: FastifyRequest, reply: FastifyReply) => void {
  const children = new Map<string, Observer>();
  return (request, reply) => {
    const key = `${request.method} ${reply.statusCode}`;
    let child = children.get(key);
    if (child === undefined) {
      child = httpRequestDuration.labels(request.method, route, String(reply.statusCode));
      children.set(key, child);
    }
    child.observe(reply.elapsedTime / 1000);
  };
}

/** The `code` of a 429's error body (a string or Buffer holding JSON in the error schema). */
function errorCodeOf(payload: unknown): string | undefined {
  const text = typeof payload === 'string' ? payload : Buffer.isBuffer(payload) ? payload.toString('utf8') : undefined;
  return text === undefined ? undefined : /"code"\s*:\s*"([a-z0-9_]{1,64})"/.exec(text)?.[1];
}

export default fp(async function metricsPlugin(app: FastifyInstance) {
  app.addHook('onRoute', (route) => {
    const observe = routeObserver(route.url);
    const hook: onResponseHookHandler = (request, reply, done) => {
      observe(request, reply);
      done();
    };
    const own = route.onResponse;
    route.onResponse = own === undefined ? [hook] : [...(Array.isArray(own) ? own : [own]), hook];
  });
  const unmatched = routeObserver(UNMATCHED_ROUTE);
  app.addHook('onResponse', (request, reply, done) => {
    if (request.is404) unmatched(request, reply);
    done();
  });
  // quota refusals: one integer comparison per answer; the body is read only on a 429
  const refusals: onSendHookHandler = (_request, reply, payload, done) => {
    if (reply.statusCode === 429) countQuotaRefusal(errorCodeOf(payload));
    done(null, payload);
  };
  app.addHook('onSend', refusals);
});
