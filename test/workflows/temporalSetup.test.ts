// `npm run temporal:setup` (temporal/setupCli.ts) against the dev server of the run, and the worker's
// start-up check: a worker refuses to start, with one line, on a namespace that does not exist or lacks
// a search attribute the workflows upsert; after the setup (run twice: idempotent) it starts.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { msNumberToTs } from '@temporalio/common/lib/time.js';
import { startChildWorker, type ChildWorker } from '../reliability/childWorker.js';
import { SEARCH_ATTRIBUTES, searchAttributeProblems } from '../../temporal/searchAttributes.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const namespace = `setup-test-${process.pid}-${Date.now() % 1e6}`;
let connection: Connection;
const workers: ChildWorker[] = [];

const workerEnv = () => ({
  TEMPORAL_ADDRESS: inject('temporalAddress'),
  TEMPORAL_NAMESPACE: namespace,
  TEMPORAL_TASK_QUEUE: `setup-test-${process.pid}`,
  DATABASE_URL: inject('databaseUrl'),
  LOCALNET_CONFIG_PATH: path.join(root, '.data', 'no-such-deployment.json'), // no ledger: this worker only starts
});

/** runs the real command; resolves to its exit code and output */
function setupCli(env: Record<string, string>): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'temporal', 'setupCli.ts')], {
      cwd: root,
      env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

beforeAll(async () => {
  connection = await Connection.connect({ address: inject('temporalAddress') });
});
afterAll(async () => {
  for (const w of workers) await w.kill('SIGTERM');
  await connection?.close();
});

describe('temporal:setup and the worker start-up check', () => {
  it('a worker on a namespace that does not exist refuses to start, naming the command', async () => {
    const err = await startChildWorker(workerEnv(), 60_000).then(
      (w) => (workers.push(w), null),
      (e: Error) => e,
    );
    expect(err?.message).toContain(`namespace "${namespace}" does not exist`);
    expect(err?.message).toContain('npm run temporal:setup');
  });

  it('a worker on a namespace without the search attributes refuses to start with one line', async () => {
    await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: msNumberToTs(86_400_000) });
    // the new namespace becomes visible to the operator service within seconds
    for (let i = 0; ; i++) {
      const ok = await searchAttributeProblems(connection, namespace).then(() => true, () => false);
      if (ok) break;
      if (i > 120) throw new Error('namespace never became visible');
      await new Promise((r) => setTimeout(r, 500));
    }
    const err = await startChildWorker(workerEnv(), 60_000).then(
      (w) => (workers.push(w), null),
      (e: Error) => e,
    );
    const refusal = err?.message.split('\n').filter((l) => l.startsWith('worker: refusing to start'));
    expect(refusal).toHaveLength(1);
    for (const name of Object.keys(SEARCH_ATTRIBUTES)) expect(refusal![0]).toContain(`${name} (${SEARCH_ATTRIBUTES[name]}) is missing`);
  });

  it('temporal:setup registers them, sets the retention, and a second run changes nothing; then the worker starts', async () => {
    const env = { TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: namespace, TEMPORAL_NAMESPACE_RETENTION_DAYS: '9' };
    const first = await setupCli(env);
    expect(first.out).toContain('search attributes added');
    expect(first.out).toContain('retention 1 -> 9 days');
    expect(first.code).toBe(0);
    const second = await setupCli(env);
    expect(second.code).toBe(0);
    expect(second.out).toContain(`all ${Object.keys(SEARCH_ATTRIBUTES).length} registered`);
    expect(second.out).toContain('exists (retention 9 days)');
    expect(await searchAttributeProblems(connection, namespace)).toEqual({ missing: [], wrongType: [] });
    const ns = await connection.workflowService.describeNamespace({ namespace });
    expect(Number(ns.config?.workflowExecutionRetentionTtl?.seconds)).toBe(9 * 86_400);

    const worker = await startChildWorker(workerEnv(), 120_000);
    workers.push(worker);
    expect(worker.output()).toContain(`worker polling task queue`);
    expect(worker.output()).not.toContain('refusing to start');
  });

  it('the dev server namespace passes the check as it is', async () => {
    expect(await searchAttributeProblems(connection, 'default')).toEqual({ missing: [], wrongType: [] });
  });
});
