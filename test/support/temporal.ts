/**
 * Workflow test harness: a worker on the dev server of global-setup with its own task queue, a
 * client on the same connection, and replay of recorded histories (determinism guard).
 */
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { inspect } from 'node:util';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, IllegalStateError, NativeConnection, Runtime, Worker, type WorkerOptions } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { keepAliveInterceptor } from '../../worker/keepAlive.js';
import { runLogFile } from './secrets.js';

const { History } = proto.temporal.api.history.v1;

export function uniqueTaskQueue(prefix = 'test'): string {
  return `${prefix}-${randomUUID()}`;
}

export interface TestTemporal {
  client: Client;
  connection: NativeConnection;
  taskQueue: string;
  /** Creates (does not run) a worker on this task queue with the given workflows and activities. */
  createWorker(opts: Partial<WorkerOptions> & Pick<WorkerOptions, 'activities'> & { workflowsPath: string }): Promise<Worker>;
  close(): Promise<void>;
}

let runtimeLogInstalled = false;

/**
 * In-process workers log through the process's Temporal Runtime (worker and activity logs, failed
 * activities with their errors): in an integration run, into `temporal-<pid>.log` of the run's log
 * directory, which the secrets scan reads, instead of the test output. The Runtime can be installed
 * once per process, before anything creates it: connectTestTemporal and replayHistoryFile call this
 * first (other tests that connect on their own call it themselves); in a process
 * where the Runtime already exists (a reused vitest worker: it was installed by an earlier file)
 * the existing one is kept.
 */
export function installTestRuntimeLog(): void {
  if (runtimeLogInstalled) return;
  runtimeLogInstalled = true;
  const file = runLogFile(`temporal-${process.pid}.log`);
  if (!file) return;
  const fd = fs.openSync(file, 'a');
  const logger = new DefaultLogger('INFO', (e) => {
    const meta = e.meta && Object.keys(e.meta).length ? ` ${inspect(e.meta, { depth: 8, breakLength: Infinity, maxArrayLength: null, maxStringLength: null })}` : '';
    fs.writeSync(fd, `${new Date(Number(e.timestampNanos / 1_000_000n)).toISOString()} [${e.level}] ${e.message}${meta}\n`);
  });
  try {
    // The core's own warnings stay on the console: forwarding them (telemetryOptions.logging.forward)
    // puts every log line in a 100 ms buffer, and the last lines of a test file were lost when vitest
    // ended its process.
    Runtime.install({ logger });
  } catch (err) {
    fs.closeSync(fd);
    if (!(err instanceof IllegalStateError)) throw err;
  }
}

export async function connectTestTemporal(prefix?: string): Promise<TestTemporal> {
  installTestRuntimeLog();
  const address = inject('temporalAddress');
  const connection = await NativeConnection.connect({ address });
  const clientConnection = await Connection.connect({ address });
  const client = new Client({ connection: clientConnection, namespace: 'default' });
  const taskQueue = uniqueTaskQueue(prefix);
  return {
    client,
    connection,
    taskQueue,
    // the keep-alive heartbeats as production workers do (activities have a short heartbeatTimeout)
    createWorker: (opts) => Worker.create({ connection, namespace: 'default', taskQueue, interceptors: { activity: [keepAliveInterceptor] }, ...opts }),
    async close() {
      await clientConnection.close();
      await connection.close();
    },
  };
}

/** Saves a finished workflow's history (protobuf binary, as `temporal workflow show --output` can also produce) as a replay fixture. */
export async function recordHistory(client: Client, workflowId: string, file: string): Promise<void> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  fs.writeFileSync(file, History.encode(history).finish());
}

/**
 * Replays a recorded history against the current workflow code; throws DeterminismViolationError
 * (or another replay failure) when the code no longer produces the recorded commands. A history
 * recorded since issue 26 replays under its real workflow id only: its start checks the binding
 * naming that id (histories recorded before replay under any id).
 */
export async function replayHistoryFile(file: string, workflowsPath: string, workflowId = 'replay'): Promise<void> {
  installTestRuntimeLog();
  const history = History.decode(fs.readFileSync(file));
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
}
