// Retried marketplace steps answer their outcome, not a refusal (issue 13 follow-up), over HTTP against
// the real stack (localnet, the taskLifecycle workflow, PostgreSQL). A client whose answer was lost
// sends the same step again: while the step still runs (localnet holds consensus, so the step's topic
// message, payout or refund waits) the retry answers 202 (or 200 once the step ends), never 409; once
// the step committed it answers 200 with the task as it is. The step runs once: one topic message per
// step, one payout / one refund (balances to the tinybar), one payout activity in the history. Another
// party, another step or another result is refused as before (SPEC 3).
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { hbarToTinybars, parseTaskMessage, payoutOf, type TaskMessage } from '../../domain/market.js';
import type { TestAgent } from '../support/signing.js';
import { signedHeaders } from '../support/signing.js';
import { completeUpdate, taskStateQuery, taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { buyPassport, getJson, postJson, startPassportStack, tinybarBalance, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;
type Answer = { status: number; body: Json };

/** localnet holds consensus this long: the step in progress waits for it */
const HOLD_S = 10;
/** the routes' bounded wait: a step still running after it answers 202 */
const WAIT_MS = 3_000;

describe('retried task steps answer the outcome, never 409, and run once', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let claimer: TestAgent;
  let other: TestAgent;
  let feeBps: number;

  const post = (path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> => postJson(ps, path, body, headers);
  const signed = async (path: string, signer: TestAgent, body: unknown) => post(path, body, await signedHeaders(ps.app, signer));
  const balance = (accountId: string) => tinybarBalance(ps, accountId);
  const balances = async () => ({
    poster: await balance(poster.accountId),
    claimer: await balance(claimer.accountId),
    treasury: await balance(ps.stack.deployment.treasury),
    escrow: await balance(ps.stack.deployment.escrow),
  });
  const read = async (taskId: string) => (await getJson(ps, `/market/tasks/${taskId}`)).body;
  const workflowState = (taskId: string) => ps.t.client.workflow.getHandle(taskWorkflowId(taskId)).query(taskStateQuery);
  const until = async <T>(what: string, get: () => Promise<T>, ok: (v: T) => boolean, timeoutMs = 90_000): Promise<T> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const v = await get();
      if (ok(v)) return v;
      if (Date.now() > end) throw new Error(`${what} not reached: ${JSON.stringify(v)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  };
  /** this task's messages on the marketplace topic, once `count` of `type` are there (and a moment more for any extra) */
  const messagesOf = async (taskId: string, type: string, count = 1): Promise<TaskMessage[]> => {
    const all = async () =>
      (await ps.stack.ledger.mirror.getTopicMessages(ps.stack.deployment.topics.marketplace))
        .map((m) => parseTaskMessage(Buffer.from(m.message, 'base64').toString('utf8')))
        .filter((m): m is TaskMessage => m !== null && m.taskId === taskId);
    await until(`${count} ${type}`, all, (ms) => ms.filter((m) => m.type === type).length >= count, 60_000);
    await new Promise((r) => setTimeout(r, 1_000));
    return all();
  };
  /** how often the workflow scheduled this activity (attempts of one activity are not counted again) */
  const scheduled = async (taskId: string, activity: string) => {
    const history = await ps.t.client.workflow.getHandle(taskWorkflowId(taskId)).fetchHistory();
    return (history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === activity).length;
  };
  /** how many Updates of this name the workflow accepted (a rejected one leaves no event) */
  const accepted = async (taskId: string, update: string) => {
    const history = await ps.t.client.workflow.getHandle(taskWorkflowId(taskId)).fetchHistory();
    return (history.events ?? []).filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === update).length;
  };
  /** a funded escrow task (POST /market/tasks/signed: the price sits in escrow) */
  const fundedTask = async (title: string, priceHbar: number): Promise<Json> => {
    const r = await post('/market/tasks/signed', { posterDid: poster.did, title, priceHbar, posterPrivateKey: poster.privateKey });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ status: 'posted', escrowStatus: 'funded' });
    return r.body;
  };
  const expect202or200 = (a: Answer) => expect([200, 202], JSON.stringify(a.body)).toContain(a.status);
  const market = () => ps.app.market;
  /** localnet holds consensus and the routes wait briefly, for the step about to be sent and its retries */
  const hold = () => {
    market().settings.workflowWaitMs = WAIT_MS;
    ps.stack.localnet.faults.delayConsensus(HOLD_S);
  };
  /** the retries are sent: the next requests (setup, late retries) wait for their step as usual */
  const release = () => {
    market().settings.workflowWaitMs = 60_000;
  };

  beforeAll(async () => {
    ps = await startPassportStack('mretry');
    await ps.startWorker();
    [poster, claimer, other] = ps.agents;
    for (const a of [poster, claimer, other]) {
      const r = await buyPassport(ps, a, { tier: 'gold' });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    feeBps = Number(ps.stack.env.MARKET_FEE_BPS ?? 250);
    const state = market();
    state.settings.workflowWaitMs = 60_000;
    state.taskTimings = { retryInitialMs: 200, retryMaximumMs: 2_000, ledgerMaxAttempts: 10, activityTimeoutMs: 60_000 };
  }, 240_000);
  afterEach(() => {
    ps.stack.localnet.faults.reset();
    release();
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('claim and deliver repeated while their step waits for consensus: 202, never 409; after the commit 200 with the task; one message each', async () => {
    const task = await fundedTask('retried claim', 1.25);
    const id = task.taskId as string;

    // claim: the first try's answer is "lost" (the client does not wait for it), the retry comes while the step runs
    hold();
    const first = signed(`/market/tasks/${id}/claim`, claimer, { claimerDid: claimer.did });
    // the workflow took the step (its state says claimed), the written task (every read) is still posted
    await until('the claim step running', () => workflowState(id), (t) => t.status === 'claimed');
    expect((await read(id)).status).toBe('posted');
    const retry = await signed(`/market/tasks/${id}/claim`, claimer, { claimerDid: claimer.did });
    expect(retry.status, JSON.stringify(retry.body)).toBe(202);
    expect(retry.body.code).toBe('request_pending');
    const retryWithKey = await post(`/market/tasks/${id}/claim-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey });
    expect202or200(retryWithKey);
    // another party is refused as before, while the step runs
    const rival = await signed(`/market/tasks/${id}/claim`, other, { claimerDid: other.did });
    expect(rival.status, JSON.stringify(rival.body)).toBe(409);
    expect(rival.body.code).toBe('market_task_already_claimed');
    release();
    expect202or200(await first);
    const claimed = await until('claimed in the reads', () => read(id), (t) => t.status === 'claimed');
    expect(claimed.claimerDid).toBe(claimer.did);
    // after the commit: the same claim answers the task as it is
    const late = await signed(`/market/tasks/${id}/claim`, claimer, { claimerDid: claimer.did });
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect(late.body).toMatchObject({ taskId: id, status: 'claimed', claimerDid: claimer.did });
    expect((await post(`/market/tasks/${id}/claim-with-key`, { claimerDid: claimer.did, claimerPrivateKey: claimer.privateKey })).status).toBe(200);
    expect((await signed(`/market/tasks/${id}/claim`, other, { claimerDid: other.did })).status).toBe(409);

    // deliver, the same way
    hold();
    const result = { claimerDid: claimer.did, resultBody: 'the retried result' };
    const firstDelivery = signed(`/market/tasks/${id}/deliver`, claimer, result);
    await until('the deliver step running', () => workflowState(id), (t) => t.status === 'delivered');
    expect((await read(id)).status).toBe('claimed');
    const again = await post(`/market/tasks/${id}/deliver-with-key`, { ...result, claimerPrivateKey: claimer.privateKey });
    expect(again.status, JSON.stringify(again.body)).toBe(202);
    // another result is another delivery: refused (the task is delivered)
    const otherResult = await signed(`/market/tasks/${id}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'a different result' });
    expect(otherResult.status, JSON.stringify(otherResult.body)).toBe(409);
    // another party: 403 from the written task (claimed by the claimer)
    expect((await signed(`/market/tasks/${id}/deliver`, other, { claimerDid: other.did, resultBody: 'the retried result' })).status).toBe(403);
    release();
    expect202or200(await firstDelivery);
    await until('delivered in the reads', () => read(id), (t) => t.status === 'delivered');
    const lateDelivery = await signed(`/market/tasks/${id}/deliver`, claimer, result);
    expect(lateDelivery.status, JSON.stringify(lateDelivery.body)).toBe(200);
    expect(lateDelivery.body).toMatchObject({ status: 'delivered', resultBody: 'the retried result' });
    expect((await signed(`/market/tasks/${id}/deliver`, claimer, { claimerDid: claimer.did, resultIpfs: 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi' })).status).toBe(409);
    // a repeated claim of the delivered task still answers it, and does not take it back
    const claimAfter = await signed(`/market/tasks/${id}/claim`, claimer, { claimerDid: claimer.did });
    expect(claimAfter.status).toBe(200);
    expect(claimAfter.body.status).toBe('delivered');

    const msgs = await messagesOf(id, 'task.delivered');
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.delivered']);
    // finish the task (the poster's refund happens with cancel)
    const c = await signed(`/market/tasks/${id}/cancel`, poster, { posterDid: poster.did });
    expect(c.status, JSON.stringify(c.body)).toBe(200);
  }, 180_000);

  it('complete repeated while the payout waits for consensus: 202, one payout to the tinybar; after the commit 200 with the same payment', async () => {
    const task = await fundedTask('retried complete', 2.5);
    const id = task.taskId as string;
    expect((await signed(`/market/tasks/${id}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(200);
    expect((await signed(`/market/tasks/${id}/deliver`, claimer, { claimerDid: claimer.did, resultBody: 'paid once' })).status).toBe(200);
    const before = await balances();

    hold();
    const first = post(`/market/tasks/${id}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await read(id)).status).toBe('delivered');
    // the retries (both routes) are accepted and wait for the running step
    const retries = await Promise.all([
      post(`/market/tasks/${id}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }),
      signed(`/market/tasks/${id}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey }),
    ]);
    for (const r of retries) {
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      expect(JSON.stringify(r.body)).not.toContain(poster.privateKey);
    }
    // another party, another step: refused as before
    expect((await signed(`/market/tasks/${id}/complete`, other, { posterDid: other.did, posterPrivateKey: other.privateKey })).status).toBe(403);
    expect((await signed(`/market/tasks/${id}/claim`, other, { claimerDid: other.did })).status).toBe(409);
    release();
    expect202or200(await first);
    const done = await until('completed in the reads', () => read(id), (t) => t.status === 'completed');
    expect(done).toMatchObject({ escrowStatus: 'released' });
    expect(done.paymentTxId).toMatch(/^0\.0\.\d+@/);

    // after the commit (the workflow has ended): 200 with the task and the one payment
    for (const late of [
      await post(`/market/tasks/${id}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }),
      await signed(`/market/tasks/${id}/complete`, poster, { posterDid: poster.did, posterPrivateKey: poster.privateKey }),
    ]) {
      expect(late.status, JSON.stringify(late.body)).toBe(200);
      expect(late.body).toMatchObject({ taskId: id, status: 'completed', paymentTxId: done.paymentTxId });
    }
    expect((await signed(`/market/tasks/${id}/cancel`, poster, { posterDid: poster.did })).status).toBe(400);

    const { claimerTinybars, feeTinybars } = payoutOf(hbarToTinybars(2.5)!, feeBps);
    const after = await balances();
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(before.escrow - after.escrow).toBe(claimerTinybars + feeTinybars);
    expect(after.poster).toBe(before.poster);
    expect(await scheduled(id, 'payoutEscrow')).toBe(1);
    // the retries during the step were answered "still running" by the validator, not queued behind it
    // (a queued retry would hold signed bytes that can expire before its turn)
    expect(await accepted(id, completeUpdate.name)).toBe(1);
    const msgs = await messagesOf(id, 'task.completed');
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.claimed', 'task.delivered', 'task.completed']);
  }, 180_000);

  it('cancel repeated while the refund waits for consensus: 202, one refund to the tinybar; after the commit 200 with the same refund', async () => {
    const before = await balances();
    const task = await fundedTask('retried cancel', 1.75);
    const id = task.taskId as string;
    expect((await balances()).escrow - before.escrow).toBe(hbarToTinybars(1.75)!);

    hold();
    const first = signed(`/market/tasks/${id}/cancel`, poster, { posterDid: poster.did, reason: 'changed my mind' });
    await new Promise((r) => setTimeout(r, 1_000));
    expect((await read(id)).status).toBe('posted');
    const retry = await signed(`/market/tasks/${id}/cancel`, poster, { posterDid: poster.did, reason: 'changed my mind' });
    expect(retry.status, JSON.stringify(retry.body)).toBe(202);
    expect((await signed(`/market/tasks/${id}/cancel`, other, { posterDid: other.did })).status).toBe(403);
    release();
    expect202or200(await first);
    const cancelled = await until('cancelled in the reads', () => read(id), (t) => t.status === 'cancelled');
    expect(cancelled.escrowStatus).toBe('refunded');
    expect(cancelled.refundTxId).toMatch(/^0\.0\.\d+@/);

    const late = await signed(`/market/tasks/${id}/cancel`, poster, { posterDid: poster.did });
    expect(late.status, JSON.stringify(late.body)).toBe(200);
    expect(late.body).toMatchObject({ taskId: id, status: 'cancelled', escrowStatus: 'refunded', refundTxId: cancelled.refundTxId });
    // other steps on a cancelled task: refused as before
    expect((await signed(`/market/tasks/${id}/claim`, claimer, { claimerDid: claimer.did })).status).toBe(409);
    expect((await post(`/market/tasks/${id}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey })).status).toBe(400);

    const after = await balances();
    expect(after.poster).toBe(before.poster);
    expect(after.escrow).toBe(before.escrow);
    expect(await scheduled(id, 'refundEscrow')).toBe(1);
    const msgs = await messagesOf(id, 'task.cancelled');
    expect(msgs.map((m) => m.type)).toEqual(['task.posted', 'task.cancelled']);
  }, 180_000);
});
