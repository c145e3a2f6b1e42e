// The payment reconciler (issue 23): a Temporal Schedule on this file's task queue runs a pass every
// second over the payments that have no outcome 4 s after they were recorded (production: 10 minutes).
// A payment that moved without a request is refunded; a request whose workflow is gone is finished
// (the passport issued); a payment that never moved is released with nothing taken; a request whose
// workflow is still running is left to it. Ledger balances are the judge; every refund or finished
// request is on the audit topic's projection (audit_events), and every pass is a workflow.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HTTPFacilitatorClient } from '@x402/core/server';
import type { PaymentRequirements } from '@x402/core/types';
import { ExactHederaClientScheme } from '@agent-passport/core/x402/clientScheme';
import { paymentTransactionOf } from '../../ledger/x402/verifyPayment.js';
import { normalizeTransactionId } from '../../ledger/x402/ids.js';
import { findPaymentByTransactionId, insertPayment } from '../../db/queries/payments.js';
import { findIssuance, markRequestRefused } from '../../db/queries/passports.js';
import { passportRefundContract, passportRefundWorkflowId } from '../../workflows/contracts/passportRefund.js';
import { startWorkflow } from '../../temporal/workflows.js';
import type { ReconcileAction } from '../../workflows/contracts/paymentReconciler.js';
import { paidPost, recordFixture, startPassportStack, waitForPassport, type PassportStack } from './passportHarness.js';
import { eventually } from '../support/eventually.js';

const HBAR = 100_000_000n;
const BOUND_MS = 4_000;

describe('the payment reconciler settles every payment without an outcome after the bound', () => {
  let ps: PassportStack;
  let scheduleId: string;
  const hooks: { beforeMint?: () => Promise<void>; beforeConfirm?: () => Promise<void> } = {};
  /** the agent's latest payment */
  const paymentOf = async (accountId: string): Promise<string> => {
    const [row] = await ps.sql<{ transaction_id: string }[]>`select transaction_id from payments where payer = ${accountId} order by created_at desc limit 1`;
    return row.transaction_id;
  };
  const balance = async (accountId: string) => (await ps.stack.ledger.mirror.getHbarBalance(accountId))!;
  const nftsOf = (accountId: string) => ps.stack.ledger.mirror.getAccountNfts(accountId, { tokenId: ps.stack.deployment.passportTokenId });
  const auditOf = async (paymentTransactionId: string) =>
    (await ps.sql<{ event: Record<string, unknown> }[]>`select event from audit_events where type = 'payment.reconciled' and event->>'paymentTransactionId' = ${paymentTransactionId}`).map((r) => r.event);
  /** every action of the passes the schedule ran so far (its recent actions), with the pass's workflow id */
  const passes = async (): Promise<{ workflowId: string; actions: ReconcileAction[] }[]> => {
    const d = await ps.t.client.schedule.getHandle(scheduleId).describe();
    const out: { workflowId: string; actions: ReconcileAction[] }[] = [];
    for (const a of d.info.recentActions) {
      const h = ps.t.client.workflow.getHandle(a.action.workflow.workflowId, a.action.workflow.firstExecutionRunId);
      if ((await h.describe()).status.name !== 'COMPLETED') continue;
      out.push({ workflowId: a.action.workflow.workflowId, actions: ((await h.result()) as { actions: ReconcileAction[] }).actions });
    }
    return out;
  };
  /** the first pass that did `action` with the payment (the test fails on its absence after 90 s) */
  const passWith = async (paymentTransactionId: string, action: ReconcileAction['action']) => {
    const did = (p: { actions: ReconcileAction[] }) => p.actions.some((x) => x.paymentTransactionId === paymentTransactionId && x.action === action);
    const all = await eventually(passes, (list) => list.some(did), 90_000, 250);
    const pass = all.find(did);
    expect(pass, `a reconciler pass that ${action} ${paymentTransactionId}: ${JSON.stringify(all.flatMap((p) => p.actions))}`).toBeTruthy();
    return pass!;
  };
  const auditEventOf = async (paymentTransactionId: string) => {
    const events = await eventually(() => auditOf(paymentTransactionId), (e) => e.length > 0, 30_000, 250);
    expect(events).toHaveLength(1);
    return events[0];
  };

  beforeAll(async () => {
    ps = await startPassportStack('reconciler');
    await ps.startWorker({
      mintPassport: async (input) => {
        await hooks.beforeMint?.();
        return ps.activities.mintPassport(input);
      },
      confirmSettlement: async (input) => {
        await hooks.beforeConfirm?.();
        return ps.activities.confirmSettlement(input);
      },
    });
    scheduleId = await ps.startReconciler({ afterMs: BOUND_MS, everyMs: 1_000 });
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('a payment that moved on the ledger with no request (an API died right after settling it) is refunded to the tinybar; the refund is on the audit log', async () => {
    const agent = ps.agents[0];
    const facilitator = new HTTPFacilitatorClient({ url: ps.stack.deployment.facilitatorUrl! });
    const requirements: PaymentRequirements = {
      scheme: 'exact',
      network: 'hedera:local',
      asset: '0.0.0',
      amount: (5n * HBAR).toString(),
      payTo: ps.stack.deployment.payTo,
      maxTimeoutSeconds: 180,
      extra: { feePayer: ps.stack.localnet.config.facilitator.feePayer },
    };
    const before = await balance(agent.accountId);
    const scheme = new ExactHederaClientScheme({ accountId: agent.accountId, privateKey: agent.privateKey, keyType: agent.keyType, nodeAccountId: ps.stack.localnet.config.node.accountId });
    const { payload } = await scheme.createPaymentPayload(2, requirements);
    const paymentPayload = { x402Version: 2, accepted: requirements, payload } as never;
    const settled = await facilitator.settle(paymentPayload, requirements);
    expect(settled.success).toBe(true);
    const transactionId = normalizeTransactionId(paymentTransactionOf(paymentPayload)!.transactionId!.toString())!;
    await insertPayment(ps.sql, { transactionId, network: 'hedera:local', payer: agent.accountId, payTo: ps.stack.deployment.payTo, amountTinybars: 5n * HBAR, resource: '/passport/request', status: 'settled' });
    expect(before - (await balance(agent.accountId))).toBe(5n * HBAR);

    const pass = await passWith(transactionId, 'refunded');
    expect(await balance(agent.accountId)).toBe(before);
    expect((await findPaymentByTransactionId(ps.sql, transactionId))?.status).toBe('refunded');
    const event = await auditEventOf(transactionId);
    expect(event).toMatchObject({ type: 'payment.reconciled', outcome: 'refunded', paymentTransactionId: transactionId });
    expect(event.refundTransactionId).toBeTruthy();
    await recordFixture(ps, pass.workflowId, 'passportPaymentReconciler');
  });

  it('a request whose workflow is still running is left to it; once that run is gone (terminated), the reconciler finishes it: the passport is issued, charged once', async () => {
    const agent = ps.agents[1];
    const before = await balance(agent.accountId);
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let atMint!: () => void;
    const reached = new Promise<void>((resolve) => (atMint = resolve));
    hooks.beforeMint = async () => {
      atMint();
      await released;
      throw new Error('attempt abandoned by the test');
    };
    const waitMs = ps.state.workflowWaitMs;
    ps.state.workflowWaitMs = 500;
    let paymentTransactionId: string;
    try {
      const r = await paidPost(ps, agent, '/passport/request', { tier: 'silver' });
      expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([202, 'request_pending']);
      await reached;
      paymentTransactionId = await paymentOf(agent.accountId);
      expect((await findPaymentByTransactionId(ps.sql, paymentTransactionId))?.status).toBe('settled');
      await passWith(paymentTransactionId, 'running');
      await ps.t.client.workflow.getHandle(ps.workflowId(`passport:local:${agent.accountId}`)).terminate('test: the run is lost');
    } finally {
      ps.state.workflowWaitMs = waitMs;
      hooks.beforeMint = undefined;
      release();
    }
    await passWith(paymentTransactionId, 'issued');
    const passport = await waitForPassport(ps, agent.accountId);
    expect(passport).toMatchObject({ tier: 'silver', owner: agent.accountId, active: true });
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
    expect(before - (await balance(agent.accountId))).toBe(25n * HBAR);
    expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('issued');
    const event = await auditEventOf(paymentTransactionId);
    expect(event).toMatchObject({ outcome: 'issued', did: agent.did, tokenId: passport.tokenId, serial: passport.serialNumber });
    await recordFixture(ps, ps.workflowId(`passport:local:${agent.accountId}`), 'passportIssuanceSettleInWorkflow');
  });

  it('a recorded payment that never moved (the API died before starting its workflow) is released once it can no longer settle: nothing taken, the wallet free', async () => {
    const agent = ps.agents[2];
    const before = await balance(agent.accountId);
    const feePayer = ps.stack.localnet.config.facilitator.feePayer;
    const transactionId = `${feePayer}@1700000000.000000123`;
    await insertPayment(ps.sql, {
      transactionId,
      network: 'hedera:local',
      payer: agent.accountId,
      payTo: ps.stack.deployment.payTo,
      amountTinybars: 5n * HBAR,
      resource: '/passport/request',
      status: 'verified',
      validUntil: new Date(1_700_000_120_000),
    });
    await ps.sql`
      insert into passport_issuances (payment_transaction_id, workflow_id, network, account_id, did, tier, capabilities, status)
      values (${transactionId}, ${ps.workflowId(`passport:local:${agent.accountId}`)}, 'local', ${agent.accountId}, ${agent.did}, 'bronze', '["api_call","data_consume"]'::jsonb, 'pending')`;

    await passWith(transactionId, 'released');
    const claim = await findIssuance(ps.sql, transactionId);
    expect([claim?.status, claim?.failed_step]).toEqual(['failed', 'settle']);
    expect((await findPaymentByTransactionId(ps.sql, transactionId))?.status).toBe('failed');
    expect(await balance(agent.accountId)).toBe(before);
    expect(await auditOf(transactionId)).toEqual([]);
    await recordFixture(ps, ps.workflowId(`passport:local:${agent.accountId}`), 'passportIssuanceSettleFailed');

    // the wallet is free: it buys its passport
    const r = await paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
    expect([200, 202], JSON.stringify(r.body)).toContain(r.status);
    await waitForPassport(ps, agent.accountId);
    expect(before - (await balance(agent.accountId))).toBe(5n * HBAR);
  });

  /** Holds the named step of the next paid request until the test releases it: 202 from the API, then the hold. */
  const paidRequestHeldAt = async (agent: (typeof ps.agents)[number], hook: 'beforeMint' | 'beforeConfirm') => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    let atHook!: () => void;
    const reached = new Promise<void>((resolve) => (atHook = resolve));
    hooks[hook] = async () => {
      atHook();
      await released;
    };
    const waitMs = ps.state.workflowWaitMs;
    ps.state.workflowWaitMs = 500;
    try {
      const r = await paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
      expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([202, 'request_pending']);
      await reached;
    } finally {
      ps.state.workflowWaitMs = waitMs;
    }
    const paymentTransactionId = await paymentOf(agent.accountId);
    return {
      paymentTransactionId,
      release: () => {
        hooks[hook] = undefined;
        release();
      },
    };
  };

  // Found by the chaos run (2 of 1,000 agents held a passport and had their payment refunded): a pass
  // read a request as pending, the issuance ended, and the pass refunded the payment it now found
  // without a pending request. The refund checks the request itself, whoever asks for it.
  it('a refund asked for a payment whose passport was issued pays nothing back: charged once, the passport kept', async () => {
    const agent = ps.agents[3];
    const before = await balance(agent.accountId);
    const r = await paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
    expect([200, 202], JSON.stringify(r.body)).toContain(r.status);
    await waitForPassport(ps, agent.accountId);
    const paymentTransactionId = await paymentOf(agent.accountId);
    expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('issued');

    const result = await (await startWorkflow(ps.t.client, passportRefundContract, { paymentTransactionId, reason: 'test: a reconciler pass that read the request before it ended', timings: ps.state.timings }, {
      taskQueue: ps.t.taskQueue,
      workflowId: ps.workflowId(passportRefundWorkflowId(paymentTransactionId)),
    })).result();
    expect(result).toMatchObject({ status: 'released' });
    expect((result as { reason: string }).reason).toContain('not refunded');
    expect(before - (await balance(agent.accountId))).toBe(5n * HBAR);
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
    expect((await findPaymentByTransactionId(ps.sql, paymentTransactionId))?.status).toBe('settled');
    expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('issued');
  });

  it('a claim refused while its workflow is on its way to the mint (an API took the workflow for gone): no passport is minted, the payment is paid back once', async () => {
    const agent = ps.agents[4];
    const before = await balance(agent.accountId);
    const { paymentTransactionId, release } = await paidRequestHeldAt(agent, 'beforeConfirm');
    try {
      expect((await findPaymentByTransactionId(ps.sql, paymentTransactionId))?.status).toBe('settled');
      expect(await markRequestRefused(ps.sql, paymentTransactionId, 'test: the API took the workflow for gone', 'workflow')).toBe('refused');
    } finally {
      release();
    }
    const result = await ps.t.client.workflow.getHandle(ps.workflowId(`passport:local:${agent.accountId}`)).result();
    expect(result).toMatchObject({ status: 'refunded' });
    // the refund is one transfer whoever makes it (this workflow, or a reconciler pass for the refused claim)
    await eventually(() => balance(agent.accountId), (b) => b === before, 60_000, 250);
    expect(await balance(agent.accountId)).toBe(before);
    expect(await nftsOf(agent.accountId)).toHaveLength(0);
    expect((await findPaymentByTransactionId(ps.sql, paymentTransactionId))?.status).toBe('refunded');
    expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('refunded');
  });

  it('a claim whose workflow already took it to the ledger is not refused: the passport is issued, charged once', async () => {
    const agent = ps.agents[5];
    const before = await balance(agent.accountId);
    const { paymentTransactionId, release } = await paidRequestHeldAt(agent, 'beforeMint');
    try {
      expect(await markRequestRefused(ps.sql, paymentTransactionId, 'test: the API took the workflow for gone', 'workflow')).toBe('pending');
    } finally {
      release();
    }
    const result = await ps.t.client.workflow.getHandle(ps.workflowId(`passport:local:${agent.accountId}`)).result();
    expect(result).toMatchObject({ status: 'issued' });
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
    expect(before - (await balance(agent.accountId))).toBe(5n * HBAR);
    expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('issued');
  });

  it('a refund (or release) asked while another run is on its way to the mint, e.g. a workflow started straight in Temporal, pays nothing back and leaves the claim to that run: the passport is issued, charged once', async () => {
    const agent = ps.agents[4]; // its first claim was refused and refunded above: the wallet buys again
    const before = await balance(agent.accountId);
    const { paymentTransactionId, release } = await paidRequestHeldAt(agent, 'beforeMint');
    try {
      const result = await (await startWorkflow(ps.t.client, passportRefundContract, { paymentTransactionId, reason: 'test: a refund started by someone who reached Temporal', timings: ps.state.timings }, {
        taskQueue: ps.t.taskQueue,
        workflowId: ps.workflowId(passportRefundWorkflowId(paymentTransactionId)),
      })).result();
      expect(result).toMatchObject({ status: 'released' });
      expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('pending');
    } finally {
      release();
    }
    const result = await ps.t.client.workflow.getHandle(ps.workflowId(`passport:local:${agent.accountId}`)).result();
    expect(result).toMatchObject({ status: 'issued' });
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
    expect(before - (await balance(agent.accountId))).toBe(5n * HBAR);
    expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('issued');
    expect((await findPaymentByTransactionId(ps.sql, paymentTransactionId))?.status).toBe('settled');
  });
});
