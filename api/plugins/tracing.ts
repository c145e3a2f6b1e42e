/**
 * The HTTP side of a trace (issue 30): @fastify/otel opens one SERVER span per request, the parent of
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
import type { FastifyInstance } from 'fastify';

export default fp(async function tracingPlugin(app: FastifyInstance) {
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
  // The body of a POST is read in the callbacks of the socket's stream, outside the request's context,
  // and Fastify goes on from there: without this, the hooks after parsing (the signature check, the x402
  // gate) and everything they start would open traces of their own. One context switch per request.
  app.addHook('preValidation', (request, _reply, done) => {
    const ctx = request.opentelemetry().context;
    if (ctx) context.with(ctx, done);
    else done();
  });
});
