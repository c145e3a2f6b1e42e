/**
 * The one way the service's adapters (the ledger submitter, the mirror client, viem's transport, the
 * x402 facilitator, ledger activities) open a span of their own. While tracing is off (no OTLP
 * endpoint: telemetry/tracing.ts never started), or outside any trace, `withSpan` only calls `fn`: no
 * span object, no context switch. Attributes are chosen by the callers: ids and statuses, never a key, a token, a payment
 * header, a request or result body.
 */
import { SpanStatusCode, context, trace, type Attributes, type Span } from '@opentelemetry/api';

let enabled = false;

/** Set by startTracing (telemetry/tracing.ts) once the SDK is registered. */
export function setTracingEnabled(on: boolean): void {
  enabled = on;
}

export function tracingEnabled(): boolean {
  return enabled;
}

const tracer = () => trace.getTracer('agent-passport');

/**
 * Runs `fn` inside a span named `name` (low cardinality: an operation, never an id), a child of the
 * active span; an error ends it with status ERROR and the error's name and message (never a stack).
 */
export async function withSpan<T>(name: string, attributes: Attributes, fn: (span?: Span) => Promise<T>): Promise<T> {
  // a span of an adapter only inside a trace (a traced request, an activity): background work and
  // untraced reads start no trace of their own
  if (!enabled || trace.getSpan(context.active()) === undefined) return fn();
  return tracer().startActiveSpan(name, { attributes }, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      const e = err as Error;
      span.setStatus({ code: SpanStatusCode.ERROR, message: `${e?.name ?? 'Error'}: ${String(e?.message ?? err).slice(0, 300)}` });
      throw err;
    } finally {
      span.end();
    }
  });
}
