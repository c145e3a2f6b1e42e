// Idempotency-Key on POST /market/tasks and /market/tasks/signed (issue 13 follow-up), over HTTP against
// the real stack (localnet escrow schedules, the taskLifecycle workflow, PostgreSQL): a retried post
// with the same key answers the same task and never starts a second workflow or creates a second
// schedule or escrow; the same key with another body is 409; keys are scoped by poster; a malformed
// key is 400; two concurrent posts with one key (an answer lost, the client retried at once) make
// one task; a key recorded but whose workflow never started (the API died in between) is finished
// by the retry; a key older than 24 h no longer counts. The poster's private key never reaches the
// key table.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { v7 as uuidv7 } from 'uuid';
import { parseTaskMessage } from '../../domain/market.js';
import { postFingerprint } from '../../domain/idempotency.js';
import { parsePrivateKey } from '@agent-passport/core/keys';
import type { TestAgent } from '../support/signing.js';
import { signedHeaders } from '../support/signing.js';
import { taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { buyPassport, getJson, postJson, startPassportStack, tinybarBalance, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;

describe('Idempotency-Key on task posting (one task per key and poster, over HTTP)', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let other: TestAgent;
  let escrow: string;

  const post = (path: string, body: unknown, headers: Record<string, string> = {}) => postJson(ps, path, body, headers);
  /** a DID-signed post (fresh challenge each time, as a retrying client does) with an Idempotency-Key */
  const signedPost = async (agent: TestAgent, body: unknown, key?: string) =>
    post('/market/tasks', body, { ...(await signedHeaders(ps.app, agent)), ...(key === undefined ? {} : { 'idempotency-key': key }) });
  const keyedPost = async (body: unknown, key: string) => post('/market/tasks/signed', body, { 'idempotency-key': key });
  const taskBody = (agent: TestAgent, title: string, priceHbar: number, over: Json = {}) => ({ posterDid: agent.did, title, description: 'idempotency', priceHbar, capabilities: ['data_provide'], ...over });
  const newKey = () => `k-${uuidv7()}`;
  const balance = (accountId: string) => tinybarBalance(ps, accountId);
  /** tasks of the projection with this title (each post of a distinct title is one logical task) */
  const tasksTitled = async (title: string) => ps.sql<{ task_id: string }[]>`select task_id from tasks where record->>'title' = ${title}`;
  /** taskLifecycle workflows of this file's task queue at this price (each test uses its own price) */
  const workflowsPriced = async (priceHbar: number): Promise<string[]> => {
    const ids: string[] = [];
    for await (const wf of ps.t.client.workflow.list({ query: `WorkflowType = 'taskLifecycle' AND TaskQueue = '${ps.t.taskQueue}' AND PriceHbar = ${priceHbar}` })) ids.push(wf.workflowId);
    return ids;
  };
  /** the visibility store follows a moment behind: wait until at least one is listed, then count */
  const countWorkflows = async (priceHbar: number): Promise<string[]> => {
    const end = Date.now() + 30_000;
    for (;;) {
      const ids = await workflowsPriced(priceHbar);
      if (ids.length > 0 || Date.now() > end) {
        await new Promise((r) => setTimeout(r, 1_000));
        return workflowsPriced(priceHbar);
      }
      await new Promise((r) => setTimeout(r, 300));
    }
  };
  /** task.posted messages on the marketplace topic (through the mirror) for these task ids / this title */
  const postedMessages = async (title: string, expectAtLeast: number) => {
    const end = Date.now() + 60_000;
    for (;;) {
      const raw = await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.marketplace);
      const msgs = raw
        .map((m) => parseTaskMessage(Buffer.from(m.message, 'base64').toString('utf8')))
        .filter((m) => m !== null && m.type === 'task.posted' && m.title === title);
      if (msgs.length >= expectAtLeast || Date.now() > end) return msgs;
      await new Promise((r) => setTimeout(r, 500));
    }
  };

  beforeAll(async () => {
    ps = await startPassportStack('mktidem');
    await ps.startWorker();
    [poster, , other] = ps.agents;
    for (const a of [poster, other]) {
      const r = await buyPassport(ps, a, { tier: 'gold' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    escrow = ps.stack.deployment.escrow;
    ps.app.market.settings.workflowWaitMs = 60_000;
  }, 240_000);
  afterAll(async () => {
    await ps?.stop();
  });

  it('the same key twice answers the same task: one workflow, one schedule on the ledger; a retry after a step answers the task as it is now', async () => {
    const key = newKey();
    const body = taskBody(poster, 'idem twice', 1.11);
    const first = await signedPost(poster, body, key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ status: 'posted', escrowStatus: 'scheduled', title: 'idem twice' });
    const second = await signedPost(poster, body, key);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body.taskId).toBe(first.body.taskId);
    expect(second.body.scheduleId).toBe(first.body.scheduleId);

    expect((await tasksTitled('idem twice')).map((r) => r.task_id)).toEqual([first.body.taskId]);
    expect(await countWorkflows(1.11)).toEqual([taskWorkflowId(first.body.taskId)]);
    const posted = await postedMessages('idem twice', 1);
    expect(posted.map((m) => m!.taskId)).toEqual([first.body.taskId]);
    const schedule = await ps.stack.ledger.mirror.getSchedule(first.body.scheduleId);
    expect(schedule).toMatchObject({ schedule_id: first.body.scheduleId, deleted: false });

    // after the task moved on, the retry answers it as it is now (cancelled), not a new task
    const c = await post(`/market/tasks/${first.body.taskId}/cancel`, { posterDid: poster.did }, await signedHeaders(ps.app, poster));
    expect(c.status, JSON.stringify(c.body)).toBe(200);
    const third = await signedPost(poster, body, key);
    expect(third.status, JSON.stringify(third.body)).toBe(200);
    expect(third.body).toMatchObject({ taskId: first.body.taskId, status: 'cancelled', escrowStatus: 'cancelled' });
    expect(await tasksTitled('idem twice')).toHaveLength(1);
    expect(await workflowsPriced(1.11)).toHaveLength(1);

    // without the header, behaviour is unchanged: every post is a new task
    const a = await signedPost(poster, taskBody(poster, 'no key', 1.12));
    const b = await signedPost(poster, taskBody(poster, 'no key', 1.12));
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.taskId).not.toBe(b.body.taskId);
  });

  it('the same key with another body is 409 idempotency_key_reused in the error schema; nothing is created', async () => {
    const key = newKey();
    const first = await signedPost(poster, taskBody(poster, 'idem body', 1.21), key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    const changed = await signedPost(poster, taskBody(poster, 'idem body changed', 1.21), key);
    expect(changed.status, JSON.stringify(changed.body)).toBe(409);
    expect(changed.body).toMatchObject({ code: 'idempotency_key_reused' });
    expect(changed.body.error).toContain(first.body.taskId);
    expect(changed.body.hint).toMatch(/new Idempotency-Key/);
    expect(Object.keys(changed.body).sort()).toEqual(expect.arrayContaining(['code', 'error', 'hint']));
    // the same key on the other posting route is another request too
    const otherRoute = await keyedPost({ ...taskBody(poster, 'idem body', 1.21), posterPrivateKey: poster.privateKey }, key);
    expect(otherRoute.status, JSON.stringify(otherRoute.body)).toBe(409);
    expect(JSON.stringify(otherRoute.body)).not.toContain(poster.privateKey);
    expect(await tasksTitled('idem body changed')).toHaveLength(0);
    expect(await tasksTitled('idem body')).toHaveLength(1);
    // the catalog lists the code for both posting routes
    const catalog = await getJson(ps, '/api/meta/errors');
    const entry = (catalog.body.errors as Json[] | undefined)?.find((e) => e.code === 'idempotency_key_reused') ?? JSON.stringify(catalog.body).includes('idempotency_key_reused');
    expect(entry).toBeTruthy();
  });

  it('keys are scoped by poster: another poster with the same key gets its own task', async () => {
    const key = newKey();
    const mine = await signedPost(poster, taskBody(poster, 'idem scoped', 1.31), key);
    const theirs = await signedPost(other, taskBody(other, 'idem scoped', 1.31), key);
    expect(mine.status, JSON.stringify(mine.body)).toBe(200);
    expect(theirs.status, JSON.stringify(theirs.body)).toBe(200);
    expect(theirs.body.taskId).not.toBe(mine.body.taskId);
    expect(theirs.body.posterDid).toBe(other.did);
    expect(await tasksTitled('idem scoped')).toHaveLength(2);
  });

  it('a malformed key is 400 invalid_request before anything happens', async () => {
    for (const bad of ['', 'x'.repeat(65), 'has space', 'semi;colon', 'bad/slash']) {
      const r = await post('/market/tasks', taskBody(poster, 'idem malformed', 1.41), { ...(await signedHeaders(ps.app, poster)), 'idempotency-key': bad });
      expect(r.status, `${bad}: ${JSON.stringify(r.body)}`).toBe(400);
      expect(r.body.code).toBe('invalid_request');
      expect(r.body.hint ?? r.body.error).toMatch(/idempotency-key/i);
    }
    expect(await tasksTitled('idem malformed')).toHaveLength(0);
    // the longest and widest key is accepted
    const ok = await signedPost(poster, taskBody(poster, 'idem widest key', 1.42), `${'A'.repeat(58)}z9._:-`);
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it('/market/tasks/signed: the same key twice funds one escrow (the poster pays the price once); the key table never holds the private key', async () => {
    const key = newKey();
    const body = { ...taskBody(poster, 'idem signed', 1.51), posterPrivateKey: poster.privateKey };
    const before = { poster: await balance(poster.accountId), escrow: await balance(escrow) };
    const first = await keyedPost(body, key);
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body).toMatchObject({ status: 'posted', escrowStatus: 'funded' });
    const second = await keyedPost(body, key);
    expect(second.status, JSON.stringify(second.body)).toBe(200);
    expect(second.body).toMatchObject({ taskId: first.body.taskId, escrowStatus: 'funded', scheduleId: first.body.scheduleId });
    const after = { poster: await balance(poster.accountId), escrow: await balance(escrow) };
    expect(after.poster - before.poster).toBe(-151_000_000n);
    expect(after.escrow - before.escrow).toBe(151_000_000n);
    expect(await tasksTitled('idem signed')).toHaveLength(1);
    expect(await countWorkflows(1.51)).toEqual([taskWorkflowId(first.body.taskId)]);
    expect((await postedMessages('idem signed', 1)).map((m) => m!.taskId)).toEqual([first.body.taskId]);

    const rows = await ps.sql`select * from task_idempotency_keys`;
    expect(rows.length).toBeGreaterThan(0);
    const dump = JSON.stringify(rows);
    const k = parsePrivateKey(poster.privateKey, poster.keyType);
    for (const form of [poster.privateKey, k.toStringRaw(), k.toStringDer(), Buffer.from(k.toBytesRaw()).toString('base64')]) expect(dump).not.toContain(form);
    const [row] = await ps.sql`select * from task_idempotency_keys where poster_did = ${poster.did} and idempotency_key = ${key}`;
    expect(row).toMatchObject({ task_id: first.body.taskId });
    expect(Object.keys(row).sort()).toEqual(['created_at', 'idempotency_key', 'poster_did', 'request_sha256', 'task_id']);
  });

  it('a lost answer: two concurrent posts with the same key make one task', async () => {
    const key = newKey();
    const body = taskBody(poster, 'idem concurrent', 1.61);
    const [h1, h2] = [await signedHeaders(ps.app, poster), await signedHeaders(ps.app, poster)];
    const [a, b] = await Promise.all([
      post('/market/tasks', body, { ...h1, 'idempotency-key': key }),
      post('/market/tasks', body, { ...h2, 'idempotency-key': key }),
    ]);
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    expect(b.status, JSON.stringify(b.body)).toBe(200);
    expect(b.body.taskId).toBe(a.body.taskId);
    expect(await tasksTitled('idem concurrent')).toHaveLength(1);
    expect(await countWorkflows(1.61)).toEqual([taskWorkflowId(a.body.taskId)]);
    expect((await postedMessages('idem concurrent', 1)).map((m) => m!.taskId)).toEqual([a.body.taskId]);
  });

  it('a key recorded whose workflow never started (the API died in between) is finished by the retry with the recorded task id', async () => {
    const key = newKey();
    const body = taskBody(poster, 'idem crashed', 1.71);
    const taskId = uuidv7();
    await ps.sql`insert into task_idempotency_keys (poster_did, idempotency_key, request_sha256, task_id)
                 values (${poster.did}, ${key}, ${postFingerprint('/market/tasks', body)}, ${taskId})`;
    const r = await signedPost(poster, body, key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ taskId, status: 'posted', escrowStatus: 'scheduled' });
    expect(await countWorkflows(1.71)).toEqual([taskWorkflowId(taskId)]);
  });

  it('a key older than 24 h no longer counts: the post makes a new task', async () => {
    const key = newKey();
    const stale = uuidv7();
    await ps.sql`insert into task_idempotency_keys (poster_did, idempotency_key, request_sha256, task_id, created_at)
                 values (${poster.did}, ${key}, ${'0'.repeat(64)}, ${stale}, now() - interval '25 hours')`;
    const r = await signedPost(poster, taskBody(poster, 'idem expired', 1.81), key);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.taskId).not.toBe(stale);
    const [row] = await ps.sql`select task_id from task_idempotency_keys where poster_did = ${poster.did} and idempotency_key = ${key}`;
    expect(row.task_id).toBe(r.body.taskId);
  });

  it('/openapi.json documents the Idempotency-Key header on both posting routes', async () => {
    const doc = await getJson(ps, '/openapi.json');
    for (const path of ['/market/tasks', '/market/tasks/signed']) {
      const params = (doc.body.paths[path].post.parameters ?? []) as Json[];
      const header = params.find((p) => p.in === 'header' && String(p.name).toLowerCase() === 'idempotency-key');
      expect(header, `${path}: ${JSON.stringify(params)}`).toBeTruthy();
      expect(header!.required ?? false).toBe(false);
    }
  });
});
