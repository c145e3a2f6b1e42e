/**
 * The worker's share of operators' telemetry (issue 30):
 *
 *   - the Temporal SDK's own worker metrics (task slots, pollers, schedule-to-start latencies, workflow
 *     and activity outcomes: temporal_* metrics), exported by the SDK's native runtime on a loopback port
 *     of its own and served again on METRICS_PORT beside this process's metrics, so an operator scrapes
 *     one port per process (installTemporalRuntime; before any connection is made);
 *   - while tracing runs, the OpenTelemetry interceptors of @temporalio/interceptors-opentelemetry: the
 *     workflow interceptors inside the sandbox (the workflow run, its Updates and signals, each activity
 *     it schedules), whose spans reach this process's span processor through a sink, and the activity
 *     interceptor (one span per activity execution, the parent of the ledger, mirror and EVM spans its
 *     code opens), both continuing the trace the API's client put in the workflow's headers.
 */
import { createRequire } from 'node:module';
import net from 'node:net';
import { Runtime, type WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config/index.js';
import type { Tracing } from '../telemetry/tracing.js';

const require = createRequire(import.meta.url);

/** a free loopback port (the kernel's pick, released at once for the native exporter to bind) */
function freeLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer().once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

/** The workflow interceptor module of @temporalio/interceptors-opentelemetry (bundled into the workflow code). */
export const TRACING_WORKFLOW_INTERCEPTORS = require.resolve('@temporalio/interceptors-opentelemetry/lib/workflow-interceptors');

/**
 * With METRICS_PORT set: installs the SDK runtime with its Prometheus exporter on a free loopback port
 * (seconds, `_total` counters, unit suffixes: Prometheus's conventions, which `promtool check metrics`
 * holds it to) and returns what reads it for the metrics endpoint. Without: nothing (the runtime the
 * SDK installs by itself exports no metrics).
 */
export async function installTemporalRuntime(config: Pick<Config, 'METRICS_PORT'>): Promise<(() => Promise<string>) | undefined> {
  if (config.METRICS_PORT === undefined) return undefined;
  const port = await freeLoopbackPort();
  Runtime.install({
    telemetryOptions: {
      metrics: { prometheus: { bindAddress: `127.0.0.1:${port}`, countersTotalSuffix: true, unitSuffix: true, useSecondsForDurations: true } },
    },
  });
  return async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(5_000) });
    return res.ok ? res.text() : '';
  };
}

/** Worker options that trace workflows and activities (merged into createWorker's own), none while tracing is off. */
export async function tracingWorkerOptions(tracing: Tracing | null): Promise<Pick<WorkerOptions, 'sinks'> & { activityInterceptors: NonNullable<WorkerOptions['interceptors']>['activity']; workflowModules: string[] }> {
  if (!tracing) return { activityInterceptors: [], workflowModules: [] };
  const { OpenTelemetryActivityInboundInterceptor, OpenTelemetryActivityOutboundInterceptor, makeWorkflowExporter } = await import('@temporalio/interceptors-opentelemetry/lib/worker/index.js');
  return {
    activityInterceptors: [(ctx) => ({ inbound: new OpenTelemetryActivityInboundInterceptor(ctx), outbound: new OpenTelemetryActivityOutboundInterceptor(ctx) })],
    workflowModules: [TRACING_WORKFLOW_INTERCEPTORS],
    // the sandbox's spans (1.x SDK shape) go to the process's batch processor with its resource
    sinks: { exporter: makeWorkflowExporter(tracing.spanProcessor as never, tracing.resource as never) },
  };
}
