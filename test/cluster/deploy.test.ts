// A rolling deploy on the production topology, between two real versions of the code:
//   - "old": the repository at OLD_COMMIT (git archive of the whole tree, run with this repository's
//     node_modules), the commit before taskLifecycle gained a change guarded by patched()
//     (REPEATED_STEP_PATCH: a repeated step answers the task instead of a 409);
//   - "new": this working tree.
// Old workers and APIs run task lifecycles up to "escrow funded, claimed"; the database is migrated by
// the new code; workers and APIs are replaced one at a time (old and new workers poll the one task
// queue together for a while, as in a real rolling deploy) while deliveries go on; then the new code
// finishes every lifecycle, including a repeated claim on a workflow the old code started (the patched
// branch, taken mid-flight). Every workflow completes, no workflow task fails (no non-determinism), the
// ledger audit of the chaos run holds (one payout or refund per task), the later patches leave the
// markers a deploy must (ESCROW_PROMISES_PATCH, read at the start, absent from workflows the old code
// started; ESCROW_PAYS_ESCROWED_PATCH, read at completion, recorded by the new code's completions), and
// the histories, made of workflow tasks of old and new workers, are kept as replay fixtures
// (test/workflows/taskReplay.test.ts).
import { execFileSync, execSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { ensureDatabase, migrate } from '../../db/migrate.js';
import { createSql, type Sql } from '../../db/client.js';
import { claimUpdate, taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { ESCROW_PAYS_ESCROWED_PATCH, ESCROW_PROMISES_PATCH, REPEATED_STEP_PATCH } from '../../workflows/taskLifecycle.js';
import { startBalancer, type Balancer } from '../../scripts/lib/balancer.js';
import { freeLowPorts } from '../../scripts/lib/ports.js';
import { auditLedger } from '../chaos/chaos.js';
import type { ChildWorker } from '../reliability/childWorker.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { dumpDatabase } from '../support/secrets.js';
import { dropDatabase } from '../../db/migrate.js';
import { inject } from 'vitest';
import { AgentHttp, settled, until, type Json } from './agentHttp.js';
import { clusterNamespace, root, startApiProcess, startWorkerProcess } from './stack.js';
import { boundUpdateArgument } from '../../temporal/workflows.js';

/** the parent of 0e56f7f ("market: a repeated step answers its outcome"), which added REPEATED_STEP_PATCH */
const OLD_COMMIT = 'ebf7c5cd5e89ff6bbc0793bc2d5f65bd40e7aefe';
const historiesDir = path.join(root, 'test', 'fixtures', 'histories');
const workflowsPath = path.join(root, 'workflows', 'index.ts');
const { History } = proto.temporal.api.history.v1;
const EventType = proto.temporal.api.enums.v1.EventType;
const log = (line: string) => console.log(`[deploy] ${line}`);

let oldTree: string;
let ns: Awaited<ReturnType<typeof clusterNamespace>>;
let ledger: LedgerStack;
let databaseUrl: string;
let sql: Sql;
let entry: Balancer;
let apiPorts: number[];
const processes: ChildWorker[] = [];

beforeAll(async () => {
  try {
    execFileSync('git', ['-C', root, 'cat-file', '-e', `${OLD_COMMIT}^{commit}`], { stdio: 'ignore' });
  } catch {
    throw new Error(`the deploy test builds the old version from commit ${OLD_COMMIT}: this checkout lacks it (a shallow clone? git fetch --unshallow)`);
  }
  oldTree = fs.mkdtempSync(path.join(os.tmpdir(), 'deploy-old-'));
  execSync(`git -C ${JSON.stringify(root)} archive ${OLD_COMMIT} | tar -x -C ${JSON.stringify(oldTree)}`);
  fs.symlinkSync(path.join(root, 'node_modules'), path.join(oldTree, 'node_modules'));
  ns = await clusterNamespace('deploy', log);
  ledger = await startLedgerStack('deploy');
  // the database as the old version left it: created and migrated by the old code
  const base = new URL(inject('databaseUrl'));
  const u = new URL(base.toString());
  u.pathname = `/${`${base.pathname.slice(1)}_deploy_${process.pid}`.slice(0, 63)}`;
  databaseUrl = u.toString();
  await ensureDatabase(databaseUrl);
  execFileSync(process.execPath, ['--import', 'tsx', path.join(oldTree, 'db', 'migrateCli.ts')], { cwd: oldTree, env: { PATH: process.env.PATH, HOME: process.env.HOME, DATABASE_URL: databaseUrl }, stdio: 'pipe' });
  sql = createSql(databaseUrl, { max: 4 });
  apiPorts = await freeLowPorts(2);
  entry = await startBalancer({ port: 0, upstreams: apiPorts.map((p) => `http://127.0.0.1:${p}`) });
});

afterAll(async () => {
  await entry?.stop();
  for (const p of processes) await p.kill('SIGTERM').catch(() => null);
  await ns?.close();
  await sql?.end({ timeout: 5 });
  if (databaseUrl) await dumpDatabase(databaseUrl).then(() => dropDatabase(databaseUrl)).catch(() => undefined);
  await ledger?.stop();
  if (oldTree) fs.rmSync(oldTree, { recursive: true, force: true });
});

function env(): Record<string, string> {
  return { ...ledger.env, DATABASE_URL: databaseUrl, TEMPORAL_ADDRESS: inject('temporalAddress'), TEMPORAL_NAMESPACE: ns.namespace, TEMPORAL_TASK_QUEUE: 'deploy', LOG_LEVEL: 'warn' };
}
// the old version reads TRUST_PROXY as a boolean; this one takes the proxies' addresses (true is for tests only)
const apiEnv = (i: number, version: 'old' | 'new') => ({
  ...env(),
  HOST: '127.0.0.1',
  PORT: String(apiPorts[i]),
  PUBLIC_BASE_URL: entry.url,
  REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
  TRUST_PROXY: version === 'old' ? 'true' : '127.0.0.1',
  RATE_LIMIT_MAX: '1000000',
});
async function started(p: Promise<ChildWorker>): Promise<ChildWorker> {
  const child = await p;
  processes.push(child);
  return child;
}
async function stopped(p: ChildWorker): Promise<void> {
  await p.kill('SIGTERM'); // graceful, as a deploy stops a process
}

/** the workflow task completions of a history, by worker identity ("pid@host") */
function workflowTaskIdentities(history: proto.temporal.api.history.v1.IHistory): string[] {
  return (history.events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED).map((e) => e.workflowTaskCompletedEventAttributes?.identity ?? '');
}

describe('rolling deploy from the old version to this one, with lifecycles mid-flight', () => {
  it('every workflow completes on the new code, no workflow task fails, each task pays or refunds once; histories kept', async () => {
    const cfg = ledger.localnet.config;
    const [posterAgent, claimerAgent] = cfg.accounts;
    const poster = new AgentHttp(entry.url, posterAgent!, cfg.node);
    const claimer = new AgentHttp(entry.url, claimerAgent!, cfg.node);
    const statusOf = async (taskId: string) => (await poster.get(`/market/tasks/${taskId}`)).body as Json;
    const reaches = (taskId: string, status: string) => async () => ((await statusOf(taskId)).status === status ? statusOf(taskId) : undefined);

    // ---- the old version: two workers, two APIs ---------------------------------------------------
    const oldWorkers = [await started(startWorkerProcess(env(), { name: 'old-worker-1', tree: oldTree })), await started(startWorkerProcess(env(), { name: 'old-worker-2', tree: oldTree }))];
    const apis = [await started(startApiProcess(apiEnv(0, 'old'), { name: 'old-api-1', tree: oldTree })), await started(startApiProcess(apiEnv(1, 'old'), { name: 'old-api-2', tree: oldTree }))];
    log(`old version ${OLD_COMMIT.slice(0, 7)} up: workers ${oldWorkers.map((w) => w.child.pid).join(', ')}`);
    for (const a of [poster, claimer]) {
      const p = async () => ((await a.get(`/passport/address/${a.agent.accountId}`)).body.passports as Json[] | undefined)?.find((x) => x.active);
      await settled(await a.paidPost('/passport/request', { tier: 'gold' }), 'passport', p);
    }
    // five tasks with escrow funded; four claimed (mid-flight), one left posted
    const tasks: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await poster.post('/market/tasks/signed', { posterDid: poster.agent.did, posterPrivateKey: poster.agent.privateKey, title: `deploy task ${i}`, priceHbar: 1 + i / 4 });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.escrowStatus).toBe('funded');
      tasks.push(String(r.body.taskId));
    }
    for (const id of tasks.slice(0, 4)) await settled(await claimer.post(`/market/tasks/${id}/claim-with-key`, { claimerDid: claimer.agent.did, claimerPrivateKey: claimer.agent.privateKey }), 'claim', reaches(id, 'claimed'));
    // a repeated claim Update (a retry whose answer was lost), straight to the workflow: the old code's
    // validator refuses it (nothing enters the history)
    // (bound as the API binds every Update argument since issue 26)
    const repeatClaim = () => {
      const h = ns.client.workflow.getHandle(taskWorkflowId(tasks[2]!));
      return h.executeUpdate(claimUpdate, { args: [boundUpdateArgument(h, claimUpdate, { claimerDid: claimer.agent.did })] });
    };
    await expect(repeatClaim()).rejects.toThrow();

    // ---- the deploy: migrations first, then one process at a time ----------------------------------
    await migrate(databaseUrl);
    const deliver = (id: string) => claimer.post(`/market/tasks/${id}/deliver-with-key`, { claimerDid: claimer.agent.did, claimerPrivateKey: claimer.agent.privateKey, resultBody: `result ${id}` });
    const newWorkers: ChildWorker[] = [];
    newWorkers.push(await started(startWorkerProcess(env(), { name: 'new-worker-1' })));
    // old and new workers on the one task queue: a delivery now may be run by either
    const during = deliver(tasks[0]!);
    await stopped(oldWorkers[0]!);
    newWorkers.push(await started(startWorkerProcess(env(), { name: 'new-worker-2' })));
    const during2 = deliver(tasks[1]!);
    await stopped(oldWorkers[1]!);
    for (const i of [0, 1]) {
      await stopped(apis[i]!); // the other API serves meanwhile, through the entry point
      apis[i] = await started(startApiProcess(apiEnv(i, 'new'), { name: `new-api-${i + 1}` }));
    }
    await settled(await during, 'deliver', reaches(tasks[0]!, 'delivered'));
    await settled(await during2, 'deliver', reaches(tasks[1]!, 'delivered'));
    log(`new version up: workers ${newWorkers.map((w) => w.child.pid).join(', ')}`);

    // ---- the new version finishes everything ----------------------------------------------------------
    // the same repeated claim Update on that workflow, which the old code started: the new code takes the
    // patched branch mid-flight (records the patch marker) and answers the task
    expect(await repeatClaim()).toMatchObject({ taskId: tasks[2], status: 'claimed', claimerDid: claimer.agent.did });
    for (const id of tasks.slice(2, 4)) await settled(await deliver(id), 'deliver', reaches(id, 'delivered'));
    for (const id of tasks.slice(0, 4)) {
      const done = await settled(await poster.post(`/market/tasks/${id}/complete-with-key`, { posterDid: poster.agent.did, posterPrivateKey: poster.agent.privateKey }), 'complete', reaches(id, 'completed'));
      expect(done.status).toBe('completed');
    }
    const cancelled = await settled(await poster.signedPost(`/market/tasks/${tasks[4]}/cancel`, { posterDid: poster.agent.did }), 'cancel', reaches(tasks[4]!, 'cancelled'));
    expect(cancelled).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });

    // ---- what the histories say -----------------------------------------------------------------------
    const oldIds = new Set(oldWorkers.map((w) => `${w.child.pid}@`));
    const newIds = new Set(newWorkers.map((w) => `${w.child.pid}@`));
    const by = (ids: Set<string>, identities: string[]) => identities.filter((i) => [...ids].some((p) => i.startsWith(p))).length;
    for (const id of tasks) {
      const handle = ns.client.workflow.getHandle(taskWorkflowId(id));
      await until(`workflow of ${id} closed`, async () => ((await handle.describe()).status.name === 'COMPLETED' ? true : undefined));
      const history = await handle.fetchHistory();
      const failed = (history.events ?? []).filter((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED);
      expect(failed.map((e) => e.workflowTaskFailedEventAttributes?.failure?.message), `workflow task failures of task ${id}`).toEqual([]);
      const identities = workflowTaskIdentities(history);
      expect(by(oldIds, identities), `old workers in ${id}`).toBeGreaterThan(0);
      expect(by(newIds, identities), `new workers in ${id}`).toBeGreaterThan(0);
      // the whole history replays against this code
      await Worker.runReplayHistory({ workflowsPath }, history, taskWorkflowId(id));
    }
    // the patch markers: REPEATED_STEP_PATCH where the repeated claim took the new branch; the later
    // patches as a deploy crossing them must leave them: ESCROW_PROMISES_PATCH is read at a workflow's
    // start, so workflows the old code started keep the old timers (no marker), while
    // ESCROW_PAYS_ESCROWED_PATCH is read at completion, so the completions the new code ran record it
    const markersOf = async (id: string) =>
      ((await ns.client.workflow.getHandle(taskWorkflowId(id)).fetchHistory()).events ?? [])
        .filter((e) => e.eventType === EventType.EVENT_TYPE_MARKER_RECORDED)
        .flatMap((m) => Object.values(m.markerRecordedEventAttributes?.details ?? {}).flatMap((d) => (d.payloads ?? []).map((p) => Buffer.from(p.data ?? []).toString('utf8'))))
        .join('\n');
    expect(await markersOf(tasks[2]!)).toContain(REPEATED_STEP_PATCH);
    for (const [i, id] of tasks.entries()) {
      const markers = await markersOf(id);
      expect(markers, `markers of task ${id}`).not.toContain(ESCROW_PROMISES_PATCH);
      if (i < 4) expect(markers, `markers of task ${id}`).toContain(ESCROW_PAYS_ESCROWED_PATCH);
    }

    // ---- the ledger audit of the chaos run: one payout per completed task, one refund per cancelled one
    const audit = await auditLedger({
      sql,
      temporal: ns.client,
      mirrorBase: cfg.mirrorUrl.replace(/\/api\/v1\/?$/, ''),
      cfg,
      agents: [posterAgent!, claimerAgent!],
      knownTasks: new Set(tasks),
      // the workers run the payment reconciler with its default bound (PAYMENT_RECONCILE_AFTER_MS)
      boundMs: 600_000,
    });
    expect(audit.violations).toEqual([]);
    expect([audit.completed, audit.cancelled, audit.open]).toEqual([4, 1, 0]);

    // ---- replay fixtures: a workflow the deploy crossed mid-flight with the patched branch, and one
    // whose delivery ran while old and new workers polled together
    // (both recorded before ESCROW_PAYS_ESCROWED_PATCH existed), and the repeated-claim workflow again as
    // this code finishes it (both patch markers)
    for (const [id, name] of [
      [tasks[2]!, 'taskLifecycle-rolling-deploy-repeated-claim'],
      [tasks[0]!, 'taskLifecycle-rolling-deploy-overlap'],
      [tasks[2]!, 'taskLifecycle-rolling-deploy-pays-escrowed'],
    ] as const) {
      const file = path.join(historiesDir, `${name}.history.bin`);
      if (fs.existsSync(file) && process.env.RECORD_HISTORIES !== '1') continue;
      const history = await ns.client.workflow.getHandle(taskWorkflowId(id)).fetchHistory();
      fs.writeFileSync(file, History.encode(history).finish());
      log(`recorded ${file} (${history.events?.length} events)`);
    }
  });
});
