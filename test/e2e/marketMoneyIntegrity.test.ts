// Money-path integrity of the marketplace (issue 19 items 1, 3, 4, 5), end to end against the real
// workflow, worker activities and localnet:
//  - Updates written straight into Temporal (the SDK client, no API; plaintext payloads, as anyone
//    reaching the frontend could send them) carrying operator -> attacker bytes or a ScheduleSign
//    of a schedule that is not the task's are rejected before they enter history; no HBAR moves;
//    the workflow stays healthy and the task completes normally afterwards;
//  - the escrow is an account of its own, with its own key, that pays no fee; its balance equals
//    the funded, unpaid escrows (the escrow audit);
//  - a task pays out what it escrowed: while a raised price is not covered, completion answers 409
//    and a top-up schedule waits for the poster's signature;
//  - schedule outcomes come from the ledger: with the mirror lagging behind, a cancel racing the
//    poster's own ScheduleSign refunds the money, and a renewal does not create a second schedule.
// Every marketplace party holds a gold passport (the tier ladder: gold and platinum post and claim).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountId, Hbar, ScheduleCreateTransaction, ScheduleSignTransaction, Transaction, TransactionId, TransferTransaction, type Client } from '@hashgraph/sdk';
import { Client as TemporalClient, WorkflowFailedError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { randomBytes, randomUUID } from 'node:crypto';
import { payoutOf, hbarToTinybars, postedTask } from '../../domain/market.js';
import { ENCODING } from '../../temporal/codec.js';
import { completeUpdate, fundUpdate, taskLifecycleContract, taskStateQuery, taskWorkflowId, TASK_REFUSAL_TYPE, type TaskRefusal } from '../../workflows/contracts/taskLifecycle.js';
import { boundUpdateArgument, startWorkflow } from '../../temporal/workflows.js';
import { auditEscrow } from '../../ledger/escrowAudit.js';
import type { MarketLedgerActivities } from '../../activities/ledger/market.js';
import { parsePrivateKey } from '@agent-passport/core/keys';
import { sdkClient } from '../localnet/harness.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { testConfig } from '../support/app.js';
import { buyPassport, getJson, postJson, recordFixture, startPassportStack, tinybarBalance, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;
const HBAR = 100_000_000n;

/** The parties of a money-path test and the attacker's own SDK client (read when a helper runs). */
interface Parties {
  ps: PassportStack;
  poster: TestAgent;
  claimer: TestAgent;
  attacker: TestAgent;
  attackerClient: Client;
}

/** The helpers of the money-path tests over one stack: balances, API steps, Updates written straight into Temporal, attacker bytes. */
function moneyKit(parties: () => Parties) {
  const p = parties;
  const ok = (r: { status: number; body: Json }) => {
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const post = (path: string, body: unknown) => postJson(p().ps, path, body);
  const signed = async (path: string, agent: TestAgent, body: unknown) => postJson(p().ps, path, body, await signedHeaders(p().ps.app, agent));
  const balance = (id: string) => tinybarBalance(p().ps, id);
  const balances = async () => {
    const { ps, poster, claimer, attacker } = p();
    const d = ps.stack.deployment;
    return {
      operator: await balance(d.operator.accountId),
      treasury: await balance(d.treasury),
      escrow: await balance(d.escrow),
      poster: await balance(poster.accountId),
      claimer: await balance(claimer.accountId),
      attacker: await balance(attacker.accountId),
    };
  };
  /** the task's workflow through `client` (default: the API's client of the stack) */
  const handle = (taskId: string, client: TemporalClient = p().ps.t.client) => client.workflow.getHandle(taskWorkflowId(taskId));
  const waitTask = async (taskId: string, pred: (t: Json) => boolean, what: string, timeoutMs = 90_000): Promise<Json> => {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const r = await getJson(p().ps, `/market/tasks/${taskId}`);
      if (r.status === 200 && pred(r.body)) return r.body;
      if (Date.now() > end) throw new Error(`task ${taskId}: ${what} not reached: ${JSON.stringify(r.body)}`);
      await new Promise((res) => setTimeout(res, 250));
    }
  };
  const claimAndDeliver = async (taskId: string) => {
    const { claimer } = p();
    ok(await signed(`/market/tasks/${taskId}/claim`, claimer, { claimerDid: claimer.did }));
    ok(await signed(`/market/tasks/${taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: `result of ${taskId}` }));
  };

  /** An Update written straight into Temporal (through `client`); answers the refusal it met (or null when it was accepted and ran). */
  async function inject(taskId: string, update: typeof completeUpdate | typeof fundUpdate, args: Json, client?: TemporalClient): Promise<TaskRefusal | null> {
    try {
      // bound as the API binds it (issue 26): what the validators refuse here is the bytes the argument carries
      const h = handle(taskId, client);
      await h.executeUpdate(update as typeof completeUpdate, { args: [boundUpdateArgument(h, update as typeof completeUpdate, args as never)] });
      return null;
    } catch (err) {
      expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
      const cause = (err as WorkflowUpdateFailedError).cause;
      expect(cause).toBeInstanceOf(ApplicationFailure);
      expect((cause as ApplicationFailure).type).toBe(TASK_REFUSAL_TYPE);
      return (cause as ApplicationFailure).details?.[0] as TaskRefusal;
    }
  }
  const acceptedUpdates = async (taskId: string) =>
    (await handle(taskId).fetchHistory()).events!.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes).length;
  const failedWorkflowTasks = async (taskId: string) => (await handle(taskId).fetchHistory()).events!.filter((e) => e.workflowTaskFailedEventAttributes).length;

  /** operator -> attacker, paid and signed by the attacker (the reproduction of the issue) */
  async function operatorToAttacker(tinybars = 250n * HBAR): Promise<string> {
    const { ps, attacker } = p();
    const tx = new TransferTransaction()
      .addHbarTransfer(AccountId.fromString(ps.stack.deployment.operator.accountId), Hbar.fromTinybars((-tinybars).toString()))
      .addHbarTransfer(AccountId.fromString(attacker.accountId), Hbar.fromTinybars(tinybars.toString()))
      .setTransactionId(TransactionId.generate(AccountId.fromString(attacker.accountId)))
      .setNodeAccountIds([AccountId.fromString(ps.stack.localnet.config.node.accountId)])
      .freeze();
    await tx.sign(parsePrivateKey(attacker.privateKey));
    return Buffer.from(tx.toBytes()).toString('base64');
  }

  /** A schedule the attacker created (operator -> attacker), and a ScheduleSign of it paid by the operator, as the API builds the poster's. */
  async function foreignScheduleSign(): Promise<{ scheduleId: string; signedBytes: string }> {
    const { ps, attacker, attackerClient } = p();
    const operator = ps.stack.deployment.operator.accountId;
    const r = await (
      await new ScheduleCreateTransaction()
        .setScheduledTransaction(new TransferTransaction().addHbarTransfer(AccountId.fromString(operator), Hbar.fromTinybars(-250n * HBAR)).addHbarTransfer(AccountId.fromString(attacker.accountId), Hbar.fromTinybars(250n * HBAR)))
        .setScheduleMemo(`task ${randomUUID()} fund`) // looks like ours; another each time (no identical schedule)
        .execute(attackerClient)
    ).getReceipt(attackerClient);
    const scheduleId = r.scheduleId!.toString();
    const sign = new ScheduleSignTransaction()
      .setScheduleId(scheduleId)
      .setTransactionId(TransactionId.generate(AccountId.fromString(operator)))
      .setNodeAccountIds([AccountId.fromString(ps.stack.localnet.config.node.accountId)])
      .freeze();
    await sign.sign(parsePrivateKey(attacker.privateKey));
    return { scheduleId, signedBytes: Buffer.from(sign.toBytes()).toString('base64') };
  }

  return { ok, post, signed, balance, balances, handle, waitTask, claimAndDeliver, inject, acceptedUpdates, failedWorkflowTasks, operatorToAttacker, foreignScheduleSign };
}

describe('marketplace money paths (issue 19)', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let claimer: TestAgent;
  let attacker: TestAgent;
  let attackerClient: Client;
  let feeBps: number;
  let operator: string;
  let treasury: string;
  let escrow: string;

  const { ok, post, signed, balance, balances, handle, waitTask, claimAndDeliver, inject, acceptedUpdates, failedWorkflowTasks, operatorToAttacker, foreignScheduleSign } = moneyKit(() => ({
    ps,
    poster,
    claimer,
    attacker,
    attackerClient,
  }));
  const state = () => ps.app.market;
  const fastRetries = { retryInitialMs: 200, retryMaximumMs: 2_000, ledgerMaxAttempts: 10, activityTimeoutMs: 60_000 };

  beforeAll(async () => {
    ps = await startPassportStack('mmoney');
    await ps.startWorker();
    [poster, claimer, attacker] = ps.agents;
    for (const a of [poster, claimer]) ok(await buyPassport(ps, a, { tier: 'gold' }));
    ({ operator: { accountId: operator }, treasury, escrow } = ps.stack.deployment);
    feeBps = testConfig(ps.stack.env).MARKET_FEE_BPS;
    attackerClient = sdkClient(ps.stack.localnet.config, attacker);
    state().settings.workflowWaitMs = 60_000;
    state().taskTimings = fastRetries;
  }, 240_000);
  afterAll(async () => {
    attackerClient?.close();
    ps.stack.localnet.faults.reset();
    await ps?.stop();
  });

  describe('item 1: the worker checks what it signs, whatever reaches it', () => {
    it('a complete Update injected with operator -> attacker bytes (task without escrow) is rejected before history; nothing moves; the task completes normally', async () => {
      const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'direct', priceHbar: 2, escrow: false }));
      await claimAndDeliver(task.taskId);
      const before = await balances();
      const accepted = await acceptedUpdates(task.taskId);

      const refused = await inject(task.taskId, completeUpdate, { posterDid: poster.did, directTransferBytes: await operatorToAttacker() });
      expect(refused).toMatchObject({ status: 400, code: 'invalid_request' });
      expect(refused!.message).toMatch(/refused/);
      // the exact expected transfer, but signed by the attacker instead of the poster: past the validator, the
      // handler refuses a complete the API never authorised (issue 26) before anything is submitted (the
      // activity's own signature check is tested on its own below)
      const prep = ok(await signed(`/market/tasks/${task.taskId}/prepare-payment`, poster, { posterDid: poster.did }));
      const wrongKey = Transaction.fromBytes(Buffer.from(prep.txBytes, 'base64'));
      await wrongKey.sign(parsePrivateKey(attacker.privateKey));
      const refused2 = await inject(task.taskId, completeUpdate, { posterDid: poster.did, directTransferBytes: Buffer.from(wrongKey.toBytes()).toString('base64') });
      expect(refused2).toMatchObject({ status: 403 });
      expect(refused2!.message).toMatch(/did not authorise it/);

      expect(await balances()).toEqual(before);
      // the structural refusal never entered history (validator); the well-formed one ran and was refused in its handler
      expect(await acceptedUpdates(task.taskId)).toBe(accepted + 1);
      expect(await failedWorkflowTasks(task.taskId)).toBe(0);
      expect((await handle(task.taskId).query(taskStateQuery)).status).toBe('delivered');

      // healthy: the poster completes it as usual
      const sig = ok(await signed('/market/sign', poster, { txBytes: prep.txBytes, privateKey: poster.privateKey }));
      const done = ok(await signed(`/market/tasks/${task.taskId}/complete`, poster, { posterDid: poster.did, txBytes: prep.txBytes, signature: sig.signature, publicKey: sig.publicKey }));
      expect(done.status).toBe('completed');
      const after = await balances();
      const { claimerTinybars, feeTinybars } = payoutOf(2n * HBAR, feeBps);
      expect(after.claimer - before.claimer).toBe(claimerTinybars);
      expect(after.treasury - before.treasury).toBe(feeTinybars);
      expect(after.attacker).toBe(before.attacker);
    });

    it('fund and complete Updates injected with foreign bytes on an escrow task are rejected; no schedule of the attacker executes; the task completes normally', async () => {
      const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'escrow', priceHbar: 1.5 }));
      expect(task.escrowStatus).toBe('scheduled');
      await claimAndDeliver(task.taskId);
      const foreign = await foreignScheduleSign();
      const before = await balances();
      const accepted = await acceptedUpdates(task.taskId);
      const attempts: [typeof fundUpdate | typeof completeUpdate, Json][] = [
        // a CryptoTransfer where a ScheduleSign belongs
        [fundUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: task.scheduleId, signedBytes: await operatorToAttacker() }] }],
        // a ScheduleSign of the attacker's schedule, labelled as the task's, and under its own id
        [fundUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: task.scheduleId, signedBytes: foreign.signedBytes }] }],
        [fundUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: foreign.scheduleId, signedBytes: foreign.signedBytes }] }],
        [completeUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: task.scheduleId, signedBytes: foreign.signedBytes }] }],
        [completeUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: foreign.scheduleId, signedBytes: foreign.signedBytes }] }],
        [completeUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: task.scheduleId, signedBytes: 'not base64 at all!' }] }],
        // a direct transfer on an escrow task
        [completeUpdate, { posterDid: poster.did, directTransferBytes: await operatorToAttacker() }],
      ];
      for (const [update, args] of attempts) {
        const r = await inject(task.taskId, update, args);
        expect(r, JSON.stringify(args).slice(0, 120)).toMatchObject({ status: 400 });
      }
      expect(await balances()).toEqual(before);
      expect(await acceptedUpdates(task.taskId)).toBe(accepted);
      expect(await failedWorkflowTasks(task.taskId)).toBe(0);
      expect((await ps.stack.ledger.mirror.getSchedule(foreign.scheduleId))?.executed_timestamp ?? null).toBeNull();
      expect((await handle(task.taskId).query(taskStateQuery)).escrowStatus).toBe('scheduled');

      const done = ok(await post(`/market/tasks/${task.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }));
      expect(done).toMatchObject({ status: 'completed', escrowStatus: 'released' });
      const after = await balances();
      const { claimerTinybars, feeTinybars } = payoutOf(hbarToTinybars(1.5)!, feeBps);
      expect(before.poster - after.poster).toBe(hbarToTinybars(1.5)!);
      expect(after.claimer - before.claimer).toBe(claimerTinybars);
      expect(after.treasury - before.treasury).toBe(feeTinybars);
      expect(after.escrow).toBe(before.escrow);
      expect(after.attacker).toBe(before.attacker);
    });
  });

  describe('item 1: the activities check on their own (a workflow whose input was forged)', () => {
    const market = () => ps.activities as unknown as MarketLedgerActivities;
    const failureOf = async (p: Promise<unknown>) => {
      const err = await p.then(() => null, (e: unknown) => e);
      expect(err).toBeInstanceOf(ApplicationFailure);
      return err as ApplicationFailure;
    };

    it('a ScheduleSign of a foreign schedule named as pending, and a payment whose facts name the operator as the poster: refused, nothing signed, nothing moves', async () => {
      const foreign = await foreignScheduleSign();
      const before = await balances();
      const sign = await failureOf(
        market().submitScheduleSign({ idempotencyKey: `forged/${foreign.scheduleId}`, scheduleId: foreign.scheduleId, signedBytes: foreign.signedBytes, posterAccountId: attacker.accountId, pendingScheduleIds: [foreign.scheduleId] }),
      );
      expect(sign.type).toBe('ClientTransactionRefused');
      expect(sign.nonRetryable).toBe(true);
      expect(sign.message).toMatch(/not an escrow schedule of this service/);
      const taskId = randomUUID();
      const pay = await failureOf(
        market().submitDirectTransfer({
          idempotencyKey: `forged/${taskId}/payment`,
          signedBytes: await operatorToAttacker(),
          taskId,
          posterAccountId: operator,
          claimerAccountId: attacker.accountId,
          priceTinybars: (250n * HBAR).toString(),
          feeTinybars: '0',
        }),
      );
      expect(pay.type).toBe('ClientTransactionRefused');
      // nothing moved; the operator paid only the ScheduleInfo query that found the schedule foreign
      const { operator: opAfter, ...after } = await balances();
      const { operator: opBefore, ...rest } = before;
      expect(after).toEqual(rest);
      expect(opBefore - opAfter).toBeLessThan(HBAR / 100n);
      expect((await ps.stack.ledger.mirror.getSchedule(foreign.scheduleId))?.executed_timestamp ?? null).toBeNull();
    });
  });

  describe('item 1: the direct payment activity checks the poster signed it', () => {
    it('the exact expected transfer signed by another key is refused by the activity itself; nothing moves', async () => {
      const market = () => ps.activities as unknown as MarketLedgerActivities;
      const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'direct, wrong key', priceHbar: 2, escrow: false }));
      await claimAndDeliver(task.taskId);
      const prep = ok(await signed(`/market/tasks/${task.taskId}/prepare-payment`, poster, { posterDid: poster.did }));
      const wrongKey = Transaction.fromBytes(Buffer.from(prep.txBytes, 'base64'));
      await wrongKey.sign(parsePrivateKey(attacker.privateKey));
      const before = await balances();
      const { claimerTinybars, feeTinybars } = payoutOf(2n * HBAR, feeBps);
      const err = await market()
        .submitDirectTransfer({
          idempotencyKey: `test/${task.taskId}/payment`,
          signedBytes: Buffer.from(wrongKey.toBytes()).toString('base64'),
          taskId: task.taskId,
          posterAccountId: poster.accountId,
          claimerAccountId: claimer.accountId,
          priceTinybars: (claimerTinybars + feeTinybars).toString(),
          feeTinybars: feeTinybars.toString(),
        })
        .then(() => null, (e: unknown) => e as ApplicationFailure);
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err!.type).toBe('ClientTransactionRefused');
      expect(err!.message).toMatch(/not signed by the key of/);
      expect(await balances()).toEqual(before);
      ok(await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did }));
    });
  });

  describe('item 3: the escrow is an account of its own', () => {
    it('is not the operator, treasury or payTo; has its own key, which signs its payouts; never pays a fee', async () => {
      const d = ps.stack.deployment;
      expect(new Set([d.escrow, d.operator.accountId, d.treasury, d.payTo]).size).toBe(4);
      const escrowKey = parsePrivateKey(d.escrowPrivateKey);
      expect(escrowKey.publicKey.toStringRaw()).not.toBe(parsePrivateKey(d.operator.privateKey).publicKey.toStringRaw());
      const account = await ps.stack.ledger.mirror.getAccount(d.escrow);
      expect(account?.key?.key).toBe(escrowKey.publicKey.toStringRaw());
      // the payouts and refunds so far were paid (fees) by the operator: the escrow is never a payer
      const txs = await ps.stack.ledger.mirror.collect<{ transaction_id: string; scheduled?: boolean }>(`/transactions?account.id=${d.escrow}&limit=100`, 'transactions');
      expect(txs.length).toBeGreaterThan(0);
      expect(txs.filter((t) => t.transaction_id.startsWith(`${d.escrow}-`))).toEqual([]);
    });
  });

  describe('item 4: a task pays out what it escrowed', () => {
    it('while a raised price is not covered (its top-up expired), complete answers 409 with a top-up to sign; the next complete signs it and pays the price', async () => {
      // short schedules, no renewal: the top-up of the raised price expires unsigned
      state().taskTimings = { ...fastRetries, scheduleLifetimeMs: 8_000, renewLeadMs: 1_000, maxRenewals: 0 };
      const before = await balances();
      const task = ok(await post('/market/tasks/signed', { posterDid: poster.did, title: 'raised', priceHbar: 2, posterPrivateKey: poster.privateKey }));
      state().taskTimings = fastRetries;
      expect(task.escrowStatus).toBe('funded');
      const raised = ok(await signed(`/market/tasks/${task.taskId}/increase-reward`, poster, { posterDid: poster.did, newPriceHbar: 3 }));
      expect(raised.topUpScheduleId).toMatch(/^0\.0\.\d+$/);
      await waitTask(task.taskId, (t) => t.topUpScheduleId === null, 'top-up expired');
      await claimAndDeliver(task.taskId);
      const funded = await balances();
      expect(funded.escrow - before.escrow).toBe(2n * HBAR);

      const refused = await post(`/market/tasks/${task.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey });
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.code).toBe('market_escrow_underfunded');
      expect(refused.body.hint).toMatch(/top-up/);
      // nothing paid; the operator paid the new top-up schedule's creation fee only
      const { operator: opAfter, ...afterRefusal } = await balances();
      const { operator: opFunded, ...fundedRest } = funded;
      expect(afterRefusal).toEqual(fundedRest);
      expect(opFunded - opAfter).toBeLessThan(HBAR / 100n);
      const waiting = await waitTask(task.taskId, (t) => t.topUpScheduleId !== null, 'a new top-up');
      expect(waiting).toMatchObject({ status: 'delivered', escrowStatus: 'funded' });

      const done = ok(await post(`/market/tasks/${task.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }));
      expect(done).toMatchObject({ status: 'completed', escrowStatus: 'released' });
      const after = await balances();
      const { claimerTinybars, feeTinybars } = payoutOf(3n * HBAR, feeBps);
      expect(before.poster - after.poster).toBe(3n * HBAR);
      expect(after.claimer - before.claimer).toBe(claimerTinybars);
      expect(after.treasury - before.treasury).toBe(feeTinybars);
      expect(after.escrow).toBe(before.escrow);
      await recordFixture(ps, taskWorkflowId(task.taskId), 'taskLifecycle-underfunded');
    });
  });

  describe('item 4: the escrow key pays only what a task holds on the ledger', () => {
    const market = () => ps.activities as unknown as MarketLedgerActivities;
    it('a workflow started straight in Temporal with forged state (a funded escrow it never had) cannot pay itself out of the escrow', async () => {
      // money of another task sits in the escrow
      const victim = ok(await post('/market/tasks/signed', { posterDid: poster.did, title: 'victim', priceHbar: 1, posterPrivateKey: poster.privateKey }));
      const before = await balances();
      const taskId = randomUUID().replace(/^(.{14})./, '$17');
      const forged = {
        ...postedTask(
          { taskId, title: 'forged', description: '', priceHbar: 1, priceTinybars: HBAR.toString(), capabilities: [], posterDid: attacker.did, verifierType: 'none', verifierConfig: null, deadline: null, feeBps, escrow: true },
          new Date().toISOString(),
        ),
        status: 'delivered' as const,
        claimerDid: attacker.did,
        escrowStatus: 'funded' as const,
        escrowedTinybars: HBAR.toString(),
        scheduleId: victim.scheduleId,
      };
      // since issue 26 such a start fails before any step (carried state comes only from continue-as-new) ...
      const h = await startWorkflow(ps.t.client, taskLifecycleContract, { task: forged, timings: fastRetries, carried: { task: forged, seq: 3, renewals: 0, scheduleExpiresAt: null } }, {
        taskQueue: ps.t.taskQueue,
        workflowId: taskWorkflowId(taskId),
      });
      const failed = await h.result().catch((e: unknown) => e);
      expect(failed).toBeInstanceOf(WorkflowFailedError);
      expect(String((failed as WorkflowFailedError).cause?.message)).toMatch(/carried state comes only from continue-as-new/);
      // ... and the escrow key pays only what the task holds, whoever asks: the payout activity refuses
      const refusal = await market()
        .payoutEscrow({ idempotencyKey: `task:${taskId}/payout`, taskId, claimerAccountId: attacker.accountId, claimerTinybars: HBAR.toString(), feeTinybars: '0' })
        .then(() => null, (e: unknown) => e as ApplicationFailure);
      expect(refusal).toBeInstanceOf(Error);
      expect(String((refusal as Error & { type?: string }).type ?? (refusal as Error).message)).toMatch(/ESCROW_NOT_HELD/);
      expect((refusal as Error).message).toMatch(/holds 0 tinybars/);
      expect(await balances()).toEqual(before);
      ok(await signed(`/market/tasks/${victim.taskId}/cancel`, poster, { posterDid: poster.did }));
    });
  });

  describe('item 5: schedule outcomes come from the ledger, not the mirror', () => {
    /** The poster signs its escrow schedule on the ledger itself (paying its own ScheduleSign), while the mirror lags. */
    async function posterSignsDirectly(scheduleId: string): Promise<void> {
      const client = sdkClient(ps.stack.localnet.config, poster);
      try {
        const tx = await new ScheduleSignTransaction().setScheduleId(scheduleId).freezeWith(client).sign(parsePrivateKey(poster.privateKey));
        const receipt = await (await tx.execute(client)).getReceipt(client);
        expect(receipt.status.toString()).toBe('SUCCESS');
      } finally {
        client.close();
      }
    }

    it("a cancel racing the poster's own ScheduleSign refunds the escrowed money (the mirror has not seen the execution yet)", async () => {
      const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'race cancel', priceHbar: 1.25 }));
      const before = await balances();
      ps.stack.localnet.faults.freezeMirror(120);
      try {
        await posterSignsDirectly(task.scheduleId);
        expect((await ps.stack.ledger.mirror.getSchedule(task.scheduleId))?.executed_timestamp ?? null).toBeNull();
        const signedOnLedger = await balances();
        expect(signedOnLedger.escrow - before.escrow).toBe(hbarToTinybars(1.25)!);
        const c = ok(await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did }));
        expect(c).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });
        const after = await balances();
        expect(after.escrow).toBe(before.escrow);
        expect(after.poster - signedOnLedger.poster).toBe(hbarToTinybars(1.25)!);
      } finally {
        ps.stack.localnet.faults.reset();
      }
    });

    it('a renewal finds the schedule executed on the ledger and creates no second schedule', async () => {
      state().taskTimings = { ...fastRetries, scheduleLifetimeMs: 10_000, renewLeadMs: 6_000, maxRenewals: 3 };
      const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'race renewal', priceHbar: 1.1 }));
      state().taskTimings = fastRetries;
      const before = await balances();
      ps.stack.localnet.faults.freezeMirror(120);
      try {
        await posterSignsDirectly(task.scheduleId);
        // the renewal comes 4 s after posting: it must see the execution on the ledger
        const next = await waitTask(task.taskId, (t) => t.escrowStatus !== 'scheduled' || t.scheduleId !== task.scheduleId, 'the renewal step', 60_000);
        expect(next).toMatchObject({ escrowStatus: 'funded', scheduleId: task.scheduleId, topUpScheduleId: null });
        expect((await balances()).escrow - before.escrow).toBe(hbarToTinybars(1.1)!);
      } finally {
        ps.stack.localnet.faults.reset();
      }
      const c = ok(await signed(`/market/tasks/${task.taskId}/cancel`, poster, { posterDid: poster.did }));
      expect(c).toMatchObject({ status: 'cancelled', escrowStatus: 'refunded' });
      expect((await balances()).escrow).toBe(before.escrow);
    });
  });

  it('the escrow audit holds to the tinybar: balance = funded, unpaid escrows (one task left funded)', async () => {
    const open = ok(await post('/market/tasks/signed', { posterDid: poster.did, title: 'left funded', priceHbar: 0.75, posterPrivateKey: poster.privateKey }));
    expect(open.escrowStatus).toBe('funded');
    const d = ps.stack.deployment;
    let report = await auditEscrow(ps.stack.ledger.mirror, { escrowAccountId: d.escrow, marketplaceTopicId: d.topics.marketplace });
    for (let i = 0; i < 20 && !report.ok; i++) {
      await new Promise((r) => setTimeout(r, 500)); // the mirror indexes the last steps
      report = await auditEscrow(ps.stack.ledger.mirror, { escrowAccountId: d.escrow, marketplaceTopicId: d.topics.marketplace });
    }
    expect(report.violations).toEqual([]);
    expect(report.balanceTinybars).toBe(await balance(d.escrow));
    expect(report.heldTinybars).toBe(hbarToTinybars(0.75)!);
    expect(report.openEscrows).toBe(1);
    expect(report.depositsTinybars - report.payoutsTinybars - report.refundsTinybars).toBe(report.balanceTinybars);
  });
});

// Issue 19, "Done when", second bullet, combined: the worker and the API run with the payload codec
// (PAYLOAD_CODEC_KEY set, NODE_ENV=test, so an unencrypted payload is refused, temporal/codec.ts).
// The attacker's operator -> attacker bytes are sent (a) through a raw Temporal client without the
// key (plaintext payloads): the codec refuses them before the Update reaches the workflow; (b)
// through a client with the key (as someone holding a leaked key, or the API itself, would send
// them): the Update validators refuse them. Either way no HBAR moves (operator, treasury, escrow,
// attacker, to the tinybar), nothing enters history, no workflow task fails, and the task then
// completes normally through the API.
describe('marketplace money paths with the payload codec: plaintext refused, encrypted attacker bytes refused by the validators (issue 19)', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let claimer: TestAgent;
  let attacker: TestAgent;
  let attackerClient: Client;
  /** anyone who reaches the Temporal frontend without the key */
  let raw: TemporalClient;
  let feeBps: number;

  const { ok, signed, post, balances, handle, claimAndDeliver, inject, acceptedUpdates, failedWorkflowTasks, operatorToAttacker, foreignScheduleSign } = moneyKit(() => ({
    ps,
    poster,
    claimer,
    attacker,
    attackerClient,
  }));

  /** The Update through the raw client (plaintext payloads): the refusal's message. */
  async function injectPlaintext(taskId: string, update: typeof completeUpdate | typeof fundUpdate, args: Json): Promise<string> {
    const err = await raw.workflow
      .getHandle(taskWorkflowId(taskId))
      .executeUpdate(update as typeof completeUpdate, { args: [args as never] })
      .then(
        () => null,
        (e: unknown) => e,
      );
    expect(err, 'a plaintext Update was accepted').toBeInstanceOf(WorkflowUpdateFailedError);
    return String((err as WorkflowUpdateFailedError).cause?.message);
  }

  /** Both injections of one attack: (a) plaintext, refused by the codec; (b) encrypted, refused by the validator (400). */
  async function attackBothWays(taskId: string, update: typeof completeUpdate | typeof fundUpdate, args: Json, what: string): Promise<void> {
    expect(await injectPlaintext(taskId, update, args), `${what}, plaintext`).toMatch(/refused: unencrypted payload/);
    const refused = await inject(taskId, update, args);
    expect(refused, `${what}, encrypted`).toMatchObject({ status: 400 });
  }

  beforeAll(async () => {
    ps = await startPassportStack('mcodec', { codecKey: randomBytes(32).toString('hex') });
    await ps.startWorker();
    [poster, claimer, attacker] = ps.agents as [TestAgent, TestAgent, TestAgent];
    for (const a of [poster, claimer]) ok(await buyPassport(ps, a, { tier: 'gold' }));
    feeBps = testConfig(ps.stack.env).MARKET_FEE_BPS;
    attackerClient = sdkClient(ps.stack.localnet.config, attacker);
    raw = new TemporalClient({ connection: ps.t.client.connection, namespace: ps.t.client.options.namespace });
  }, 240_000);
  afterAll(async () => {
    attackerClient?.close();
    await ps?.stop();
  });

  it('without escrow: a complete Update with operator -> attacker bytes is refused in plaintext and encrypted; nothing moves; the task completes through the API', async () => {
    const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'codec direct', priceHbar: 2, escrow: false }));
    // the stack really encrypts what it writes (else this test would prove nothing about the codec)
    const started = (await handle(task.taskId).fetchHistory()).events![0]!.workflowExecutionStartedEventAttributes!;
    expect(Buffer.from(started.input!.payloads![0]!.metadata!.encoding!).toString()).toBe(ENCODING);
    await claimAndDeliver(task.taskId);
    const before = await balances();
    const accepted = await acceptedUpdates(task.taskId);

    await attackBothWays(task.taskId, completeUpdate, { posterDid: poster.did, directTransferBytes: await operatorToAttacker() }, 'complete, operator -> attacker');

    expect(await balances()).toEqual(before);
    expect(await acceptedUpdates(task.taskId)).toBe(accepted);
    expect(await failedWorkflowTasks(task.taskId)).toBe(0);
    expect((await handle(task.taskId).query(taskStateQuery)).status).toBe('delivered');

    // the poster completes it as usual
    const prep = ok(await signed(`/market/tasks/${task.taskId}/prepare-payment`, poster, { posterDid: poster.did }));
    const sig = ok(await signed('/market/sign', poster, { txBytes: prep.txBytes, privateKey: poster.privateKey }));
    const done = ok(await signed(`/market/tasks/${task.taskId}/complete`, poster, { posterDid: poster.did, txBytes: prep.txBytes, signature: sig.signature, publicKey: sig.publicKey }));
    expect(done.status).toBe('completed');
    const after = await balances();
    const { claimerTinybars, feeTinybars } = payoutOf(2n * HBAR, feeBps);
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow).toBe(before.escrow);
    expect(after.attacker).toBe(before.attacker);
    expect(await failedWorkflowTasks(task.taskId)).toBe(0);
  });

  it('with escrow: fund and complete Updates with foreign bytes are refused in plaintext and encrypted; nothing moves; the task completes through the API', async () => {
    const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'codec escrow', priceHbar: 1.5 }));
    expect(task.escrowStatus).toBe('scheduled');
    await claimAndDeliver(task.taskId);
    const foreign = await foreignScheduleSign();
    const before = await balances();
    const accepted = await acceptedUpdates(task.taskId);
    const toAttacker = await operatorToAttacker();
    const attacks: [typeof fundUpdate | typeof completeUpdate, Json, string][] = [
      [fundUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: task.scheduleId, signedBytes: toAttacker }] }, 'fund, a CryptoTransfer as the ScheduleSign'],
      [fundUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: foreign.scheduleId, signedBytes: foreign.signedBytes }] }, "fund, the attacker's schedule"],
      [completeUpdate, { posterDid: poster.did, scheduleSigns: [{ scheduleId: task.scheduleId, signedBytes: foreign.signedBytes }] }, "complete, the attacker's schedule as the task's"],
      [completeUpdate, { posterDid: poster.did, directTransferBytes: toAttacker }, 'complete, operator -> attacker on an escrow task'],
    ];
    for (const [update, args, what] of attacks) await attackBothWays(task.taskId, update, args, what);

    expect(await balances()).toEqual(before);
    expect(await acceptedUpdates(task.taskId)).toBe(accepted);
    expect(await failedWorkflowTasks(task.taskId)).toBe(0);
    expect((await ps.stack.ledger.mirror.getSchedule(foreign.scheduleId))?.executed_timestamp ?? null).toBeNull();
    expect((await handle(task.taskId).query(taskStateQuery)).escrowStatus).toBe('scheduled');

    const done = ok(await post(`/market/tasks/${task.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }));
    expect(done).toMatchObject({ status: 'completed', escrowStatus: 'released' });
    const after = await balances();
    const { claimerTinybars, feeTinybars } = payoutOf(hbarToTinybars(1.5)!, feeBps);
    expect(before.poster - after.poster).toBe(hbarToTinybars(1.5)!);
    expect(after.claimer - before.claimer).toBe(claimerTinybars);
    expect(after.treasury - before.treasury).toBe(feeTinybars);
    expect(after.escrow).toBe(before.escrow);
    expect(after.attacker).toBe(before.attacker);
    expect(await failedWorkflowTasks(task.taskId)).toBe(0);
  });
});
