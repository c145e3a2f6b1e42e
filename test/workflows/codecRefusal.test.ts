/**
 * Issue 19 item 2: a worker and an API client configured as production (NODE_ENV=production, a
 * payload key) refuse unencrypted payloads that someone with write access to Temporal injects
 * without the key (a raw client, no codec): a plaintext Update is rejected before it enters
 * history and the workflow stays healthy; a plaintext workflow start fails its workflow task with
 * a message saying why, and runs none of its code; the API's client refuses a plaintext memo.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection, WorkflowUpdateFailedError } from '@temporalio/client';
import type { NativeConnection, Worker } from '@temporalio/worker';
import { connectWorker, createWorker } from '../../worker/createWorker.js';
import { dataConverter } from '../../temporal/connection.js';
import { testConfig } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { installTestRuntimeLog, uniqueTaskQueue } from '../support/temporal.js';
import { addUpdate, codecCounter, countQuery, stopUpdate } from './fixtures/codecWorkflows.js';

const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'codecWorkflows.ts');

describe('unencrypted payloads outside development', () => {
  const config = testConfig({ NODE_ENV: 'production', TEMPORAL_ADDRESS: inject('temporalAddress'), PAYLOAD_CODEC_KEY: randomBytes(32).toString('hex') });
  const taskQueue = uniqueTaskQueue('codec-refusal');
  let workerConnection: NativeConnection;
  let clientConnection: Connection;
  let worker: Worker;
  let running: Promise<void>;
  /** the API's client: the product's data converter for this configuration */
  let api: Client;
  /** an injector with write access to Temporal but not the key */
  let raw: Client;

  beforeAll(async () => {
    installTestRuntimeLog();
    workerConnection = await connectWorker(config);
    worker = await createWorker({ config, connection: workerConnection, taskQueue, activities: {}, overrides: { workflowsPath, workflowBundle: undefined } });
    running = worker.run();
    clientConnection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
    api = new Client({ connection: clientConnection, dataConverter: dataConverter(config) });
    raw = new Client({ connection: clientConnection });
  });
  afterAll(async () => {
    worker?.shutdown();
    await running;
    await clientConnection?.close();
    await workerConnection?.close();
  });

  it('rejects a plaintext Update with a clear message; the workflow carries on and completes normally', async () => {
    const handle = await api.workflow.start(codecCounter, { taskQueue, workflowId: `codec-update-${taskQueue}`, args: [10] });
    expect(await handle.executeUpdate(addUpdate, { args: [1] })).toBe(11);

    const injected = raw.workflow.getHandle(handle.workflowId).executeUpdate(addUpdate, { args: [1000] });
    const err = await injected.then(
      () => expect.unreachable('a plaintext Update was accepted'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    expect(String((err as WorkflowUpdateFailedError).cause?.message)).toMatch(/refused: unencrypted payload/);

    // nothing of it counted, nothing of it is in history, and the workflow still takes encrypted Updates
    expect(await handle.query(countQuery)).toBe(11);
    expect(await handle.executeUpdate(addUpdate, { args: [2] })).toBe(13);
    expect(await handle.executeUpdate(stopUpdate)).toBe(13);
    expect(await handle.result()).toBe(13);
    const history = await handle.fetchHistory();
    const accepted = history.events!.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes);
    expect(accepted).toHaveLength(3);
    expect(history.events!.some((e) => e.workflowTaskFailedEventAttributes)).toBe(false);
  });

  it('fails the workflow task of a plaintext start, saying why, and runs none of its code', async () => {
    const workflowId = `codec-start-${taskQueue}`;
    const handle = await raw.workflow.start(codecCounter, { taskQueue, workflowId, args: [7] });
    try {
      const failed = await eventually(
        async () => (await handle.fetchHistory()).events!.find((e) => e.workflowTaskFailedEventAttributes),
        (e) => e !== undefined,
        60_000,
        200,
      );
      expect(failed?.workflowTaskFailedEventAttributes?.failure?.message).toMatch(/refused: unencrypted payload/);
      // the workflow never ran: its query handler was never installed, nothing completed
      expect((await handle.describe()).status.name).toBe('RUNNING');
      const history = await handle.fetchHistory();
      expect(history.events!.some((e) => e.workflowTaskCompletedEventAttributes)).toBe(false);
    } finally {
      await handle.terminate('test cleanup');
    }
  });

  it("the API's client refuses a plaintext memo (what it reads back from Temporal)", async () => {
    const workflowId = `codec-memo-${taskQueue}`;
    // on a task queue no worker polls: only the client side is exercised
    const handle = await raw.workflow.start(codecCounter, { taskQueue: `${taskQueue}-idle`, workflowId, args: [1], memo: { note: 'injected' } });
    try {
      await expect(api.workflow.getHandle(workflowId).describe()).rejects.toThrow(/refused: unencrypted payload/);
    } finally {
      await handle.terminate('test cleanup');
    }
  });
});
