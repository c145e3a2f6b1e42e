/**
 * Workflow test harness: a worker on the dev server of global-setup with its own task queue, a
 * client on the same connection, and replay of recorded histories (determinism guard).
 */
import fs from 'node:fs';
import { randomUUID } from 'node:crypto';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection, Worker, type WorkerOptions } from '@temporalio/worker';
import proto from '@temporalio/proto';
import { keepAliveInterceptor } from '../../worker/keepAlive.js';

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

export async function connectTestTemporal(prefix?: string): Promise<TestTemporal> {
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
 * (or another replay failure) when the code no longer produces the recorded commands.
 */
export async function replayHistoryFile(file: string, workflowsPath: string, workflowId = 'replay'): Promise<void> {
  const history = History.decode(fs.readFileSync(file));
  await Worker.runReplayHistory({ workflowsPath }, history, workflowId);
}
