import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DeterminismViolationError } from '@temporalio/workflow';
import { connectTestTemporal, recordHistory, replayHistoryFile, type TestTemporal } from '../support/temporal.js';
import { addSignal, harnessCounter, totalQuery } from './fixtures/harnessWorkflows.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, 'fixtures', 'harnessWorkflows.ts');
const changedWorkflowsPath = path.join(here, 'fixtures', 'harnessWorkflowsChanged.ts');

describe('workflow harness on the Temporal dev server', () => {
  let t: TestTemporal;
  const historyFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'hist-')), 'harnessCounter.history.bin');

  beforeAll(async () => {
    t = await connectTestTemporal('harness');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('runs a workflow with an activity, a signal and a query on a real worker, and records its history', async () => {
    const worker = await t.createWorker({ workflowsPath, activities: { double: async (n: number) => n * 2 } });
    const result = await worker.runUntil(async () => {
      const handle = await t.client.workflow.start(harnessCounter, { taskQueue: t.taskQueue, workflowId: `harness-${t.taskQueue}`, args: [21] });
      await handle.signal(addSignal, 8);
      await handle.signal(addSignal, 0);
      const total = await handle.result();
      expect(await handle.query(totalQuery)).toBe(total);
      return total;
    });
    expect(result).toBe(50);
    await recordHistory(t.client, `harness-${t.taskQueue}`, historyFile);
    expect(fs.statSync(historyFile).size).toBeGreaterThan(100);
  });

  it('replays the recorded history against the same code', async () => {
    await expect(replayHistoryFile(historyFile, workflowsPath)).resolves.toBeUndefined();
  });

  it('fails replay when the workflow code changed its commands', async () => {
    await expect(replayHistoryFile(historyFile, changedWorkflowsPath)).rejects.toBeInstanceOf(DeterminismViolationError);
  });
});
