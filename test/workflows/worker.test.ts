/**
 * The product worker factory (worker/createWorker.ts) against the dev server, with the payload
 * codec on both sides: the workflow runs, and its input is encrypted in the stored history.
 */
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, inject, it } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { connectWorker, createWorker } from '../../worker/createWorker.js';
import { dataConverter } from '../../temporal/connection.js';
import { ENCODING } from '../../temporal/codec.js';
import { testConfig } from '../support/app.js';
import { installTestRuntimeLog, uniqueTaskQueue } from '../support/temporal.js';
import { addSignal, harnessCounter } from './fixtures/harnessWorkflows.js';

const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), 'fixtures', 'harnessWorkflows.ts');

describe('worker with the payload codec', () => {
  const config = testConfig({ TEMPORAL_ADDRESS: inject('temporalAddress'), PAYLOAD_CODEC_KEY: randomBytes(32).toString('hex') });
  const closers: Array<() => Promise<void>> = [];
  afterAll(async () => {
    for (const close of closers) await close();
  });

  it('connects, runs a workflow, and keeps its payloads encrypted in history', async () => {
    installTestRuntimeLog(); // before connectWorker creates the Runtime
    const taskQueue = uniqueTaskQueue('codec');
    const connection = await connectWorker(config);
    closers.push(() => connection.close());
    const worker = await createWorker({ config, connection, taskQueue, activities: { double: async (n: number) => n * 2 }, overrides: { workflowsPath, workflowBundle: undefined } });
    const clientConnection = await Connection.connect({ address: config.TEMPORAL_ADDRESS });
    closers.push(() => clientConnection.close());
    const client = new Client({ connection: clientConnection, dataConverter: dataConverter(config) });
    const workflowId = `codec-${taskQueue}`;

    const result = await worker.runUntil(async () => {
      const handle = await client.workflow.start(harnessCounter, { taskQueue, workflowId, args: [1234567] });
      await handle.signal(addSignal, 0);
      return handle.result();
    });
    expect(result).toBe(2469134);

    const history = await client.workflow.getHandle(workflowId).fetchHistory();
    const started = history.events!.find((e) => e.workflowExecutionStartedEventAttributes)!;
    const input = started.workflowExecutionStartedEventAttributes!.input!.payloads![0];
    expect(new TextDecoder().decode(input.metadata!.encoding!)).toBe(ENCODING);
    expect(Buffer.from(input.data!).toString('latin1')).not.toContain('1234567');

    // A client without the key cannot read the result.
    const plain = new Client({ connection: clientConnection });
    await expect(plain.workflow.getHandle(workflowId).result()).rejects.toThrow();
  });
});
