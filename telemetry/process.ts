/**
 * A process's telemetry, as its entry point starts it (api/server.ts, worker/index.ts): tracing when an
 * OTLP endpoint is configured (telemetry/tracing.ts), the metrics endpoint when METRICS_PORT is set
 * (telemetry/metricsServer.ts), and the Temporal client interceptor that carries the active trace into
 * the workflows it starts, signals and updates. With neither configured it starts nothing.
 */
import type { ClientInterceptors } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { startMetricsServer, type MetricsServer } from './metricsServer.js';
import { startTracing, type TelemetryRole, type Tracing } from './tracing.js';

export interface ProcessTelemetry {
  tracing: Tracing | null;
  metrics: MetricsServer | null;
  /** interceptors for this process's Temporal clients (none while tracing is off) */
  clientInterceptors: ClientInterceptors | undefined;
  /** what the process prints at start-up */
  describe(): string;
  shutdown(): Promise<void>;
}

export async function startProcessTelemetry(config: Config, role: TelemetryRole, o: { extraMetrics?: () => Promise<string> } = {}): Promise<ProcessTelemetry> {
  const tracing = await startTracing(config, role);
  const clientInterceptors: ClientInterceptors | undefined = tracing
    ? { workflow: [new (await import('@temporalio/interceptors-opentelemetry/lib/client/index.js')).OpenTelemetryWorkflowClientInterceptor()] }
    : undefined;
  const metrics = config.METRICS_PORT === undefined ? null : await startMetricsServer({ host: config.METRICS_HOST, port: config.METRICS_PORT, extra: o.extraMetrics });
  return {
    tracing,
    metrics,
    clientInterceptors,
    describe: () => `${role}: metrics ${metrics ? metrics.url : 'off (METRICS_PORT unset)'}; traces ${tracing ? `to ${tracing.endpoint}` : 'off (OTEL_EXPORTER_OTLP_ENDPOINT unset)'}`,
    async shutdown() {
      await metrics?.close();
      await tracing?.shutdown();
    },
  };
}
