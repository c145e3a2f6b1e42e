// Turning tracing on never breaks a running workflow (issue 30): every committed history (recorded
// without tracing) replays against the current workflows with the OpenTelemetry workflow interceptors
// compiled in and their span sink registered, as a worker with OTEL_EXPORTER_OTLP_ENDPOINT set runs them
// (worker/telemetry.ts). A nondeterminism error fails the file it came from.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { Resource } from '@opentelemetry/resources';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { tracingWorkerOptions } from '../../worker/telemetry.js';
import { boundWorkflowIdOf, installTestRuntimeLog } from '../support/temporal.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
const dir = path.join(here, '..', 'fixtures', 'histories');
const { History } = proto.temporal.api.history.v1;

describe('replay of every recorded history with the tracing interceptors', () => {
  it('replays each history without a nondeterminism error', { timeout: 300_000 }, async () => {
    installTestRuntimeLog();
    const files = fs.readdirSync(dir).filter((f) => f.endsWith('.history.bin')).sort();
    expect(files.length).toBeGreaterThan(20);
    const exporter = new InMemorySpanExporter();
    const traced = await tracingWorkerOptions({ spanProcessor: new SimpleSpanProcessor(exporter), resource: new Resource({ 'service.name': 'replay' }), endpoint: 'none', shutdown: async () => {} });
    expect(traced.workflowModules).toHaveLength(1);
    // a history recorded since the binding (issue 26) replays under the workflow id its start names
    const histories = files.map((f) => {
      const history = History.decode(fs.readFileSync(path.join(dir, f)));
      return { workflowId: boundWorkflowIdOf(history) ?? f.replace('.history.bin', ''), history };
    });
    const failures: string[] = [];
    let replayed = 0;
    for await (const r of Worker.runReplayHistories({ workflowsPath, interceptors: { workflowModules: traced.workflowModules }, sinks: traced.sinks }, histories)) {
      replayed++;
      if (r.error) failures.push(`${r.workflowId}: ${r.error.message}`);
    }
    expect(failures).toEqual([]);
    expect(replayed).toBe(files.length);
  });
});
