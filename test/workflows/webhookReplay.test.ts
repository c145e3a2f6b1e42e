// The webhookDelivery workflow (issue 28) on a real worker with a scripted activity: rounds that
// deliver, an idle wait ended by the eventsAppended signal, a failed round retried by Temporal,
// continue-as-new, and the end when the subscription is deleted. Its histories (the run that
// continued as new and the one that ended) are kept as fixtures and replay against the current code.
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/activity';
import { startWorkflow, workflowHandle } from '../../temporal/workflows.js';
import { eventsAppendedSignal, webhookDeliveryContract, webhookDeliveryWorkflowId, type DeliveryRound } from '../../workflows/contracts/webhookDelivery.js';
import { connectTestTemporal, recordHistory, replayHistoryFile, type TestTemporal } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const dir = path.join(here, '..', 'fixtures', 'histories');
const FILES = { continued: path.join(dir, 'webhookDeliveryContinued.history.bin'), ended: path.join(dir, 'webhookDeliveryEnded.history.bin') };

describe('webhookDelivery on a real worker, and the replay of its histories', () => {
  let t: TestTemporal;
  beforeAll(async () => {
    t = await connectTestTemporal('webhook');
  });
  afterAll(async () => {
    await t?.close();
  });

  it('delivers round after round, waits for a signal, survives a failed round, continues as new and ends when deleted', { timeout: 120_000 }, async () => {
    const script: (DeliveryRound | 'fail')[] = [
      { status: 'delivered', delivered: 2, lastEventId: 'e2', more: true },
      { status: 'delivered', delivered: 1, lastEventId: 'e3', more: false },
      // after the signal: a receiver failure (Temporal retries the round), then the event
      'fail',
      { status: 'delivered', delivered: 1, lastEventId: 'e4', more: false },
      // the next run (continued as new after 3 rounds): the subscription was deleted
      { status: 'ended', ended: 'deleted' },
    ];
    let calls = 0;
    let idle!: () => void;
    const reachedIdle = new Promise<void>((resolve) => (idle = resolve));
    const activities = {
      async deliverWebhookEvents(): Promise<DeliveryRound> {
        const step = script[Math.min(calls++, script.length - 1)]!;
        if (calls === 3) idle(); // the third call comes only after the signal
        if (step === 'fail') throw ApplicationFailure.retryable('event e4: the receiver answered 500', 'WebhookDeliveryFailed');
        return step;
      },
    };
    const worker = await t.createWorker({ workflowsPath, activities });
    const workflowId = webhookDeliveryWorkflowId(`replay-${randomUUID()}`);
    const result = await worker.runUntil(async () => {
      const handle = await startWorkflow(t.client, webhookDeliveryContract, { subscriptionId: workflowId.slice('webhook:'.length), retryInitialMs: 100, retryMaximumMs: 200, continueAfterRounds: 3 }, { taskQueue: t.taskQueue, workflowId });
      // idle after two rounds: the query shows what was delivered
      for (let i = 0; i < 200 && (await handle.query(webhookDeliveryContract.queries.state)).rounds < 2; i++) await new Promise((r) => setTimeout(r, 50));
      expect(await handle.query(webhookDeliveryContract.queries.state)).toMatchObject({ delivered: 3, lastEventId: 'e3', rounds: 2 });
      expect(calls).toBe(2);
      await handle.signal(eventsAppendedSignal);
      await reachedIdle;
      return workflowHandle(t.client, webhookDeliveryContract, workflowId).result();
    });
    expect(result).toEqual({ ended: 'deleted', delivered: 4 });
    expect(calls).toBe(5);

    // the first run continued as new; the second ended
    const runs: string[] = [];
    for await (const w of t.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) runs.push(w.status.name);
    expect(runs.sort()).toEqual(['COMPLETED', 'CONTINUED_AS_NEW']);
    if (!fs.existsSync(FILES.ended) || process.env.RECORD_HISTORIES === '1') {
      await recordHistory(t.client, workflowId, FILES.ended);
      const first = await t.client.workflow.getHandle(workflowId).describe();
      const firstRunId = first.raw.workflowExecutionInfo?.firstRunId ?? undefined;
      const continued = await t.client.workflow.getHandle(workflowId, firstRunId).fetchHistory();
      const proto = (await import('@temporalio/proto')).default;
      fs.writeFileSync(FILES.continued, proto.temporal.api.history.v1.History.encode(continued).finish());
    }
  });

  it.each(Object.entries(FILES))('the %s history replays against workflows/index.ts', async (_name, file) => {
    expect(fs.existsSync(file)).toBe(true);
    await expect(replayHistoryFile(file, workflowsPath)).resolves.toBeUndefined();
  });
});
