/**
 * Builds a Temporal worker: the workflows (a prebuilt bundle in production, workflowsPath in dev
 * and tests), the activities, and the shared data converter (payload encryption).
 */
import { createRequire } from 'node:module';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import type { Config } from '../config/index.js';
import { connectionOptions, dataConverter } from '../temporal/connection.js';
import { keepAliveInterceptor } from './keepAlive.js';
import type { Tracing } from '../telemetry/tracing.js';
import { tracingWorkerOptions } from './telemetry.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);

/**
 * dist/ ships workflow-bundle.js next to the compiled worker, and workflow-bundle-traced.js with the
 * tracing interceptors compiled in (a bundle's interceptors are fixed when it is built:
 * scripts/bundle-workflows.ts); dev and tests bundle from source.
 */
export function workflowSource(traced = false): Pick<WorkerOptions, 'workflowBundle' | 'workflowsPath'> {
  const bundle = path.join(here, '..', traced ? 'workflow-bundle-traced.js' : 'workflow-bundle.js');
  if (fs.existsSync(bundle)) return { workflowBundle: { codePath: bundle } };
  return { workflowsPath: require.resolve(path.join(here, '..', 'workflows', 'index.ts')) };
}

export async function connectWorker(config: Config): Promise<NativeConnection> {
  const opts = connectionOptions(config);
  return NativeConnection.connect({ address: opts.address, tls: opts.tls, apiKey: opts.apiKey });
}

export async function createWorker(opts: {
  config: Config;
  connection: NativeConnection;
  taskQueue?: string;
  activities: object;
  /** while tracing runs (telemetry/tracing.ts): workflows and activities are traced too */
  tracing?: Tracing | null;
  overrides?: Partial<WorkerOptions>;
}): Promise<Worker> {
  const traced = await tracingWorkerOptions(opts.tracing ?? null);
  return Worker.create({
    connection: opts.connection,
    namespace: opts.config.TEMPORAL_NAMESPACE,
    taskQueue: opts.taskQueue ?? opts.config.TEMPORAL_TASK_QUEUE,
    activities: opts.activities,
    dataConverter: dataConverter(opts.config),
    interceptors: {
      // the tracing span first, around everything; every running activity heartbeats (recovery after a kill)
      activity: [...(traced.activityInterceptors ?? []), keepAliveInterceptor],
      ...(traced.workflowModules.length ? { workflowModules: traced.workflowModules } : {}),
    },
    ...(traced.sinks ? { sinks: traced.sinks } : {}),
    // On SIGTERM: give running activities a moment, then stop even if pollers are still draining;
    // anything unfinished is retried by Temporal on another worker.
    shutdownGraceTime: '3s',
    shutdownForceTime: '10s',
    ...workflowSource(Boolean(opts.tracing)),
    ...opts.overrides,
  });
}
