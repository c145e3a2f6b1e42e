// Money integrity II (issue 26 items 1 and 2): a workflow input or Update argument is a claim, not an
// authority. Against the real stack with the payload codec on (everything the service writes is
// encrypted), an attacker who reaches Temporal (a raw gRPC client, no codec key) copies encrypted
// payloads between histories, Updates and starts; another who holds the codec key forges bound
// messages. Nothing moves: no HBAR (ledger balances), no NFT (the submitter's record of mints), no
// projection write.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes, randomUUID } from 'node:crypto';
import { Client as TemporalClient, WorkflowUpdateFailedError, WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import proto from '@temporalio/proto';
import type { temporal as TemporalProto } from '@temporalio/proto';
import { completeUpdate, taskStateQuery, taskWorkflowId, TASK_REFUSAL_TYPE, type TaskRefusal } from '../../workflows/contracts/taskLifecycle.js';
import { passportIssuanceContract, passportIssuanceWorkflowId } from '../../workflows/contracts/passportIssuance.js';
import { boundUpdateArgument, startWorkflow } from '../../temporal/workflows.js';
import { ENCODING } from '../../temporal/codec.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { buyPassport, getJson, postJson, startPassportStack, tinybarBalance, type PassportStack } from './passportHarness.js';

type Json = Record<string, any>;
type Payload = TemporalProto.api.common.v1.IPayload;
const { temporal } = proto;
const COMPLETED = temporal.api.enums.v1.UpdateWorkflowExecutionLifecycleStage.UPDATE_WORKFLOW_EXECUTION_LIFECYCLE_STAGE_COMPLETED;

describe('money integrity II: bound messages, authorised steps, own claims (issue 26)', () => {
  let ps: PassportStack;
  let poster: TestAgent;
  let claimer: TestAgent;
  let buyer: TestAgent;
  /** anyone who reaches the Temporal frontend: no codec key */
  let raw: TemporalClient;

  const ok = (r: { status: number; body: Json }) => {
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const signed = async (path: string, agent: TestAgent, body: unknown) => postJson(ps, path, body, await signedHeaders(ps.app, agent));
  const balances = async () => {
    const d = ps.stack.deployment;
    return {
      escrow: await tinybarBalance(ps, d.escrow),
      treasury: await tinybarBalance(ps, d.treasury),
      poster: await tinybarBalance(ps, poster.accountId),
      claimer: await tinybarBalance(ps, claimer.accountId),
    };
  };
  const history = (workflowId: string) => raw.workflow.getHandle(workflowId).fetchHistory();

  /** The raw (still encrypted) argument of the first Update `name` accepted in a workflow's history. */
  async function copiedUpdateArgument(workflowId: string, name: string): Promise<Payload> {
    const events = (await history(workflowId)).events ?? [];
    const accepted = events.find((e) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === name);
    const payload = accepted?.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.args?.payloads?.[0];
    expect(payload, `no ${name} Update in ${workflowId}`).toBeDefined();
    expect(Buffer.from(payload!.metadata!.encoding!).toString()).toBe(ENCODING);
    return payload!;
  }

  /** The raw (still encrypted) input a workflow was started with. */
  async function copiedStartInput(workflowId: string): Promise<Payload> {
    const started = (await history(workflowId)).events![0]!.workflowExecutionStartedEventAttributes!;
    const payload = started.input!.payloads![0]!;
    expect(Buffer.from(payload.metadata!.encoding!).toString()).toBe(ENCODING);
    return payload;
  }

  /** Sends an Update whose argument is a payload byte for byte (no codec): the failure message it met, or null when it ran. */
  async function sendRawUpdate(workflowId: string, name: string, payload: Payload): Promise<string | null> {
    const r = await raw.workflowService.updateWorkflowExecution({
      namespace: raw.options.namespace,
      workflowExecution: { workflowId },
      request: { meta: { updateId: randomUUID(), identity: 'attacker' }, input: { name, args: { payloads: [payload] } } },
      waitPolicy: { lifecycleStage: COMPLETED },
    });
    return r.outcome?.failure ? String(r.outcome.failure.message) : null;
  }

  /** Starts a workflow whose input is a payload byte for byte (no codec). */
  async function startRaw(workflowId: string, type: string, payload: Payload): Promise<void> {
    await raw.workflowService.startWorkflowExecution({
      namespace: raw.options.namespace,
      workflowId,
      workflowType: { name: type },
      taskQueue: { name: ps.t.taskQueue },
      input: { payloads: [payload] },
      requestId: randomUUID(),
      identity: 'attacker',
    });
  }

  /** How a workflow ended: the failure message (it must fail). */
  async function failureOf(workflowId: string): Promise<string> {
    const err = await raw.workflow.getHandle(workflowId).result().then(
      () => null,
      (e: unknown) => e,
    );
    expect(err, `${workflowId} did not fail`).toBeInstanceOf(WorkflowFailedError);
    return String((err as WorkflowFailedError).cause?.message);
  }

  /** A funded escrow task (the poster signs the funding at posting), claimed and delivered by the claimer. */
  async function deliveredFundedTask(title: string): Promise<Json> {
    const task = ok(await postJson(ps, '/market/tasks/signed', { posterDid: poster.did, title, priceHbar: 1, posterPrivateKey: poster.privateKey }));
    expect(task.escrowStatus).toBe('funded');
    ok(await signed(`/market/tasks/${task.taskId}/claim`, claimer, { claimerDid: claimer.did }));
    ok(await signed(`/market/tasks/${task.taskId}/deliver`, claimer, { claimerDid: claimer.did, resultBody: `result of ${title}` }));
    return task;
  }

  const taskState = async (taskId: string) => ok(await getJson(ps, `/market/tasks/${taskId}`));
  const mintsOf = async (prefix: string) =>
    Number((await ps.sql<{ n: string }[]>`select count(*)::text as n from ledger_submissions where kind = 'nft_mint' and idempotency_key like ${`${prefix}%`}`)[0]!.n);

  beforeAll(async () => {
    ps = await startPassportStack('mbound', { codecKey: randomBytes(32).toString('hex') });
    await ps.startWorker();
    [poster, claimer, buyer] = ps.agents as [TestAgent, TestAgent, TestAgent];
    for (const a of [poster, claimer]) ok(await buyPassport(ps, a, { tier: 'gold' }));
    ps.app.market.settings.workflowWaitMs = 60_000;
    raw = new TemporalClient({ connection: ps.t.client.connection, namespace: ps.t.client.options.namespace });
  }, 240_000);
  afterAll(async () => {
    await ps?.stop();
  });

  it("a claimer who copies the poster's encrypted cancel from another task's history and sends it as complete is refused; the escrow stays", async () => {
    const victim = await deliveredFundedTask('bound victim');
    const other = ok(await postJson(ps, '/market/tasks/signed', { posterDid: poster.did, title: 'bound other', priceHbar: 1, posterPrivateKey: poster.privateKey }));
    ok(await signed(`/market/tasks/${other.taskId}/cancel`, poster, { posterDid: poster.did }));
    const cancel = await copiedUpdateArgument(taskWorkflowId(other.taskId), 'cancel');
    const before = await balances();

    const refused = await sendRawUpdate(taskWorkflowId(victim.taskId), 'complete', cancel);

    const after = await balances();
    expect({ escrowPaidOut: before.escrow - after.escrow, claimerGot: after.claimer - before.claimer }).toEqual({ escrowPaidOut: 0n, claimerGot: 0n });
    expect(refused).toMatch(/written for another workflow/);
    expect(await taskState(victim.taskId)).toMatchObject({ status: 'delivered', escrowStatus: 'funded' });
  });

  it("the same task's own claim, sent again byte for byte, is refused as sent before", async () => {
    const task = await deliveredFundedTask('bound replay');
    const claim = await copiedUpdateArgument(taskWorkflowId(task.taskId), 'claim');
    expect(await sendRawUpdate(taskWorkflowId(task.taskId), 'claim', claim)).toMatch(/sent before/);
    // and as another Update of the same workflow
    const before = await balances();
    expect(await sendRawUpdate(taskWorkflowId(task.taskId), 'complete', claim)).toMatch(/written for another message/);
    expect(await balances()).toEqual(before);
    expect(await taskState(task.taskId)).toMatchObject({ status: 'delivered', escrowStatus: 'funded' });
  });

  it('with the codec key, a complete bound correctly but never authorised by the API is refused 403 in its handler; nothing moves; the poster completes as usual', async () => {
    const task = await deliveredFundedTask('bound forged');
    const handle = ps.t.client.workflow.getHandle(taskWorkflowId(task.taskId));
    const before = await balances();

    const err = await handle.executeUpdate(completeUpdate, { args: [boundUpdateArgument(handle, completeUpdate, { posterDid: poster.did })] }).then(
      () => null,
      (e: unknown) => e,
    );

    expect(err).toBeInstanceOf(WorkflowUpdateFailedError);
    const cause = (err as WorkflowUpdateFailedError).cause as ApplicationFailure;
    expect(cause.type).toBe(TASK_REFUSAL_TYPE);
    expect(cause.details?.[0] as TaskRefusal).toMatchObject({ status: 403, code: 'auth_did_mismatch' });
    expect(cause.message).toMatch(/did not authorise it/);
    expect(await balances()).toEqual(before);
    expect((await handle.query(taskStateQuery)).status).toBe('delivered');

    const done = ok(await postJson(ps, `/market/tasks/${task.taskId}/complete-with-key`, { posterDid: poster.did, posterPrivateKey: poster.privateKey }));
    expect(done).toMatchObject({ status: 'completed', escrowStatus: 'released' });
    const after = await balances();
    expect(before.escrow - after.escrow).toBe(100_000_000n);
    expect(after.claimer > before.claimer).toBe(true);
  });

  it("a task's encrypted start input copied under a new task id starts nothing: the run fails before the posting", async () => {
    const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'bound start', priceHbar: 1 }));
    const input = await copiedStartInput(taskWorkflowId(task.taskId));
    const copyId = taskWorkflowId(randomUUID());
    const before = await balances();

    await startRaw(copyId, 'taskLifecycle', input);

    expect(await failureOf(copyId)).toMatch(/written for another workflow/);
    expect(await balances()).toEqual(before);
    const schedules = await ps.sql`select 1 from ledger_submissions where idempotency_key like ${`${copyId}/%`}`;
    expect(schedules.length).toBe(0);
  });

  it('with the codec key, a bound task start the API never authorised (carried state, or a fresh posting) writes nothing', async () => {
    const task = ok(await signed('/market/tasks', poster, { posterDid: poster.did, title: 'bound forged start', priceHbar: 1 }));
    const state = (await ps.t.client.workflow.getHandle(taskWorkflowId(task.taskId)).query(taskStateQuery)) as Json;
    const forgedId = randomUUID().replace(/^(.{14})./, '$17');
    const forged = { ...state, taskId: forgedId, status: 'delivered', claimerDid: claimer.did, escrowStatus: 'funded', escrowedTinybars: '100000000' };
    const carriedId = taskWorkflowId(forgedId);
    await startWorkflow(ps.t.client, { type: 'taskLifecycle' } as never, { task: forged, carried: { task: forged, seq: 3, renewals: 0, scheduleExpiresAt: null } } as never, {
      taskQueue: ps.t.taskQueue,
      workflowId: carriedId,
    });
    expect(await failureOf(carriedId)).toMatch(/carried state comes only from continue-as-new/);

    const freshId = taskWorkflowId(randomUUID());
    await startWorkflow(ps.t.client, { type: 'taskLifecycle' } as never, { task: { ...state, taskId: freshId.slice(5) } } as never, { taskQueue: ps.t.taskQueue, workflowId: freshId });
    expect(await failureOf(freshId)).toMatch(/did not authorise it/);
    const writes = await ps.sql`select 1 from ledger_submissions where idempotency_key like ${`${carriedId}/%`} or idempotency_key like ${`${freshId}/%`}`;
    expect(writes.length).toBe(0);
  });

  it("a passport issuance's encrypted start input copied under another workflow id mints nothing and refunds nothing", async () => {
    ok(await buyPassport(ps, buyer, { tier: 'bronze' }));
    const own = ps.workflowId(passportIssuanceWorkflowId('local', buyer.accountId));
    const input = await copiedStartInput(own);
    const copyId = ps.workflowId(passportIssuanceWorkflowId('local', `copy-${randomBytes(3).toString('hex')}`));
    const mints = await mintsOf('');
    const treasury = await tinybarBalance(ps, ps.stack.deployment.treasury);

    await startRaw(copyId, 'passportIssuance', input);

    const failure = await failureOf(copyId);
    expect({ mints: (await mintsOf('')) - mints, treasuryDelta: (await tinybarBalance(ps, ps.stack.deployment.treasury)) - treasury }).toEqual({ mints: 0, treasuryDelta: 0n });
    expect(failure).toMatch(/written for another workflow/);
  });

  it("with the codec key, a bound issuance input under another workflow id is refused by the claim (its workflow is the claim's own), and nothing is minted", async () => {
    const own = ps.workflowId(passportIssuanceWorkflowId('local', buyer.accountId));
    const decoded = (await ps.t.client.workflow.getHandle(own).fetchHistory()).events![0]!;
    expect(decoded).toBeDefined();
    const [claim] = await ps.sql<{ payment_transaction_id: string; tier: string }[]>`select payment_transaction_id, tier from passport_issuances where workflow_id = ${own}`;
    const forgedId = ps.workflowId(passportIssuanceWorkflowId('local', `forged-${randomBytes(3).toString('hex')}`));
    const payment = (await ps.sql<{ payer: string; amount_tinybars: string }[]>`select payer, amount_tinybars::text from payments where transaction_id = ${claim!.payment_transaction_id}`)[0]!;
    const mints = await mintsOf('');

    await startWorkflow(
      ps.t.client,
      passportIssuanceContract,
      {
        network: 'local',
        accountId: buyer.accountId,
        did: buyer.did,
        tier: 'platinum', // the claim says bronze
        capabilities: ['api_call', 'orchestration'],
        payment: { transactionId: claim!.payment_transaction_id, payer: payment.payer, amountTinybars: payment.amount_tinybars },
        timings: ps.state.timings,
      },
      { taskQueue: ps.t.taskQueue, workflowId: forgedId },
    );

    const failure = await failureOf(forgedId);
    expect((await mintsOf('')) - mints).toBe(0);
    expect(failure).toMatch(/another workflow/);
    expect(claim!.tier).toBe('bronze');
  });
});
