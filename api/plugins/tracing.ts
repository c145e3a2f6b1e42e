/**
 * The HTTP side of a trace (issue 30): @fastify/otel opens one SERVER span per request that changes
 * something (POST, PUT, PATCH, DELETE: reads are left to the metrics, below), the parent of
 * everything the request does (the Temporal client's workflow start and Updates, the facilitator and
 * ledger calls), continuing a caller's trace when a W3C `traceparent` header comes with the request.
 * Registered by api/app.ts only while tracing runs (telemetry/tracing.ts), so without an OTLP endpoint
 * no hook is added at all.
 *
 * What a span carries: method, route template, status and the path without its query string (a query
 * may hold what a caller typed); no header and no body. Lifecycle hooks get no spans of their own
 * (instrumentHooks: false): the request span and the handler span are what an operator reads, at a
 * fraction of the cost.
 */
import { context } from '@opentelemetry/api';
import { FastifyOtelInstrumentation } from '@fastify/otel';
import fp from 'fastify-plugin';
import type { FastifyInstance, preValidationHookHandler } from 'fastify';

/** Safe reads: no workflow, no ledger write; their rate, errors and latency are in the RED metrics. */
const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export default fp(async function tracingPlugin(app: FastifyInstance) {
  // Only requests that change something are traced (they start the workflows a trace follows): a read
  // route gets `otel: false` before @fastify/otel sees it, so the hot reads (docs/benchmarks.md) carry no
  // span, no wrapper and no context switch. The traced routes re-enter the request's context after body
  // parsing, which Fastify runs in the socket's callbacks: without it the hooks after parsing (the
  // signature check, the x402 gate) and everything they start would open traces of their own.
  const reenter: preValidationHookHandler = (request, _reply, done) => {
    const ctx = request.opentelemetry().context;
    if (ctx) context.with(ctx, done);
    else done();
  };
  app.addHook('onRoute', (route) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    if (methods.every((m) => READ_METHODS.has(m))) {
      route.config = { ...(route.config as object), otel: false } as typeof route.config;
      return;
    }
    const own = route.preValidation;
    route.preValidation = own === undefined ? [reenter] : [reenter, ...(Array.isArray(own) ? own : [own])];
  });
  const instrumentation = new FastifyOtelInstrumentation({
    registerOnInitialization: false,
    instrumentHooks: false,
    requestHook: (span, request) => {
      const route = request.routeOptions.url;
      span.updateName(`${request.method} ${route ?? 'unmatched'}`);
      span.setAttribute('url.path', request.url.split('?')[0]!);
    },
  });
  await app.register(instrumentation.plugin());
});
