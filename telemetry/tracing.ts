/**
 * OpenTelemetry tracing of one process (the API or the worker), started first thing by its entry point
 * (issue 30). Only when an OTLP endpoint is configured (OTEL_EXPORTER_OTLP_ENDPOINT or
 * OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, the specification's variables) and OTEL_SDK_DISABLED is not true:
 * otherwise nothing is loaded or registered, and every span helper (telemetry/spans.ts), the Fastify
 * plugin and the Temporal interceptors stay out of the way (api/app.ts, worker/telemetry.ts).
 *
 * The SDK is the OpenTelemetry Node SDK of the 1.x line (sdk-node 0.57, sdk-trace-base 1.30), the line
 * @temporalio/interceptors-opentelemetry 1.24 itself is built on: the spans the workflow sandbox makes
 * reach the worker's span processor in that line's shape (docs/decisions.md, "Operators' telemetry").
 * The exporter follows OTEL_EXPORTER_OTLP(_TRACES)_PROTOCOL (http/protobuf by default, http/json, grpc)
 * and reads its endpoint, headers, timeout and compression from the environment itself; the sampler
 * (OTEL_TRACES_SAMPLER, default parentbased_always_on), the batch processor (OTEL_BSP_*) and
 * OTEL_RESOURCE_ATTRIBUTES are read by the SDK as the specification says.
 */
import type { SpanProcessor } from '@opentelemetry/sdk-trace-base';
import type { IResource } from '@opentelemetry/resources';
import type { Config } from '../config/index.js';
import { setTracingEnabled } from './spans.js';

export type TelemetryRole = 'api' | 'worker';

export interface Tracing {
  /** where finished spans go (the worker hands it the workflow sandbox's spans too) */
  spanProcessor: SpanProcessor;
  resource: IResource;
  /** the endpoint traces are sent to (for the start-up line) */
  endpoint: string;
  /** flushes what is buffered and stops exporting */
  shutdown(): Promise<void>;
}

type TracingConfig = Pick<
  Config,
  'OTEL_EXPORTER_OTLP_ENDPOINT' | 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT' | 'OTEL_EXPORTER_OTLP_PROTOCOL' | 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL' | 'OTEL_SERVICE_NAME' | 'OTEL_SDK_DISABLED'
>;

/** Whether this configuration traces at all. */
export function tracingConfigured(config: TracingConfig): boolean {
  return !config.OTEL_SDK_DISABLED && Boolean(config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? config.OTEL_EXPORTER_OTLP_ENDPOINT);
}

async function exporterFor(protocol: Config['OTEL_EXPORTER_OTLP_PROTOCOL']) {
  // each reads OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT / _HEADERS / _TIMEOUT / _COMPRESSION itself
  if (protocol === 'http/json') return new (await import('@opentelemetry/exporter-trace-otlp-http')).OTLPTraceExporter();
  if (protocol === 'grpc') return new (await import('@opentelemetry/exporter-trace-otlp-grpc')).OTLPTraceExporter();
  return new (await import('@opentelemetry/exporter-trace-otlp-proto')).OTLPTraceExporter();
}

/** Starts tracing for this process, or returns null (and loads nothing) when it is not configured. */
export async function startTracing(config: TracingConfig, role: TelemetryRole): Promise<Tracing | null> {
  if (!tracingConfigured(config)) return null;
  const [{ NodeSDK }, { BatchSpanProcessor }, resources] = await Promise.all([
    import('@opentelemetry/sdk-node'),
    import('@opentelemetry/sdk-trace-base'),
    import('@opentelemetry/resources'),
  ]);
  const spanProcessor = new BatchSpanProcessor(await exporterFor(config.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL ?? config.OTEL_EXPORTER_OTLP_PROTOCOL));
  // service.name, then what the environment says (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES) and the host;
  // not the process detector, whose command line could carry what an operator typed
  const resource = new resources.Resource({ 'service.name': config.OTEL_SERVICE_NAME ?? `agent-passport-${role}` }).merge(
    resources.detectResourcesSync({ detectors: [resources.envDetectorSync, resources.hostDetectorSync] }),
  );
  const sdk = new NodeSDK({ resource, autoDetectResources: false, spanProcessors: [spanProcessor], instrumentations: [] });
  sdk.start();
  setTracingEnabled(true);
  return {
    spanProcessor,
    resource,
    endpoint: config.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT ?? config.OTEL_EXPORTER_OTLP_ENDPOINT!,
    async shutdown() {
      setTracingEnabled(false);
      await sdk.shutdown().catch(() => undefined);
    },
  };
}
