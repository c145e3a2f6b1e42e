// Durability of passport issuance: the worker dies after the payment settled and before the mint;
// localnet answers BUSY during the mint; the mint fails for good (saga refund); a refund is paid once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApplicationFailure, Context } from '@temporalio/activity';
import { passportRefundContract, passportRefundWorkflowId } from '../../workflows/contracts/passportRefund.js';
import { startWorkflow } from '../../temporal/workflows.js';
import type { MintPassportInput } from '../../activities/ledger/passports.js';
import { findPaymentByTransactionId, insertPayment } from '../../db/queries/payments.js';
import { getJson, paidPost, recordFixture, startPassportStack, waitForPassport, type PassportStack, type PaidResponse } from './passportHarness.js';

const HBAR = 100_000_000n;

describe('passport issuance durability', () => {
  let ps: PassportStack;
  const hooks: { beforeMint?: (input: MintPassportInput) => Promise<void>; afterMint?: () => Promise<void>; beforeDeliver?: () => Promise<void> } = {};
  const mintCalls: string[] = [];
  const activitiesWithHooks = () => ({
    mintPassport: async (input: MintPassportInput) => {
      mintCalls.push(input.idempotencyKey);
      await hooks.beforeMint?.(input);
      const minted = await ps.activities.mintPassport(input);
      await hooks.afterMint?.();
      return minted;
    },
    deliverPassport: async (input: Parameters<typeof ps.activities.deliverPassport>[0]) => {
      await hooks.beforeDeliver?.();
      return ps.activities.deliverPassport(input);
    },
  });
  const balance = async (accountId: string) => (await ps.stack.ledger.mirror.getHbarBalance(accountId))!;
  const tokenNfts = () => ps.stack.ledger.mirror.getTokenNfts(ps.stack.deployment.passportTokenId);
  const nftsOf = (accountId: string) => ps.stack.ledger.mirror.getAccountNfts(accountId, { tokenId: ps.stack.deployment.passportTokenId });
  /** The passport once issued, whether the request answered 200 or 202 (then polled). */
  const issuedOrPolled = async (r: PaidResponse, accountId: string) => {
    expect([200, 202], JSON.stringify(r.body)).toContain(r.status);
    return r.status === 200 ? r.body : waitForPassport(ps, accountId);
  };

  beforeAll(async () => {
    ps = await startPassportStack('durability');
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('the worker dies after the payment settled and before the mint; a new worker finishes: one NFT, one settlement', async () => {
    const agent = ps.agents[0];
    let mintReached!: () => void;
    const reached = new Promise<void>((resolve) => (mintReached = resolve));
    hooks.beforeMint = async () => {
      mintReached();
      await Context.current().cancelled; // blocks until the worker shuts down, then fails this attempt
    };
    const first = await ps.startWorker(activitiesWithHooks(), { shutdownGraceTime: '50ms' });
    const before = await balance(agent.accountId);
    const request = paidPost(ps, agent, '/passport/request', { tier: 'silver' });
    await reached;
    // the payment is settled, nothing is minted yet
    const [payment] = await ps.sql`select transaction_id, status from payments where payer = ${agent.accountId}`;
    expect(payment.status).toBe('settled');
    expect(await tokenNfts()).toHaveLength(0);

    first.worker.shutdown();
    await first.running;
    hooks.beforeMint = undefined;
    await ps.startWorker(activitiesWithHooks());

    const passport = await issuedOrPolled(await request, agent.accountId);
    expect(passport).toMatchObject({ tier: 'silver', tokenId: ps.stack.deployment.passportTokenId });
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
    expect(await tokenNfts()).toHaveLength(1);
    const payments = await ps.sql`select status from payments where payer = ${agent.accountId}`;
    expect(payments.map((p) => p.status)).toEqual(['settled']);
    expect(before - (await balance(agent.accountId))).toBe(25n * HBAR);
    const mints = await ps.sql`select status from ledger_submissions where idempotency_key like ${`%passport:local:${agent.accountId}/%/mint`}`;
    expect(mints.map((m) => m.status)).toEqual(['succeeded']);
    expect(mintCalls.length).toBeGreaterThanOrEqual(2); // the blocked attempt and the one that minted
  });

  it('with localnet answering BUSY during the mint (and the first answer lost), issuance completes with exactly one mint', async () => {
    const agent = ps.agents[1];
    const nftsBefore = (await tokenNfts()).length;
    let injected = false;
    let lost = false;
    hooks.beforeMint = async () => {
      if (!injected) {
        injected = true;
        ps.stack.localnet.faults.busy(8); // the node answers BUSY to the next 8 transactions
      }
    };
    hooks.afterMint = async () => {
      if (!lost) {
        lost = true; // the mint reached consensus but the activity dies before reporting it
        throw ApplicationFailure.create({ message: 'simulated crash after the mint', type: 'SimulatedCrash' });
      }
    };
    const mintCallsBefore = mintCalls.length;
    const r = await paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
    const passport = await issuedOrPolled(r, agent.accountId);
    hooks.beforeMint = undefined;
    hooks.afterMint = undefined;
    expect(injected && lost).toBe(true);
    expect(ps.stack.localnet.faults.state().busyRemaining).toBe(0);
    expect(mintCalls.length - mintCallsBefore).toBe(2); // the retried attempt reused the recorded mint
    expect(passport).toMatchObject({ tier: 'bronze' });
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
    expect((await tokenNfts()).length).toBe(nftsBefore + 1);
    const mints = await ps.sql`select status from ledger_submissions where idempotency_key like ${`%passport:local:${agent.accountId}/%/mint`}`;
    expect(mints.map((m) => m.status)).toEqual(['succeeded']);
  });

  it('a mint that fails for good refunds the payment (saga) and answers 502; the wallet can buy again', async () => {
    const agent = ps.agents[2];
    const before = await balance(agent.accountId);
    const nftsBefore = (await tokenNfts()).length;
    hooks.beforeMint = async () => {
      throw ApplicationFailure.create({ message: 'simulated final ledger failure', type: 'LedgerError.INVALID_TOKEN_ID', nonRetryable: true });
    };
    const r = await paidPost(ps, agent, '/passport/request', { tier: 'gold' });
    hooks.beforeMint = undefined;
    expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([502, 'execution_failed']);
    expect(r.body.refund).toBe('refunded');
    expect(await balance(agent.accountId)).toBe(before);
    expect((await tokenNfts()).length).toBe(nftsBefore);
    expect((await findPaymentByTransactionId(ps.sql, r.body.paymentTransactionId))?.status).toBe('refunded');
    await recordFixture(ps, ps.workflowId(`passport:local:${agent.accountId}`), 'passportIssuanceRefunded');

    const again = await paidPost(ps, agent, '/passport/request', { tier: 'gold' });
    const passport = await issuedOrPolled(again, agent.accountId);
    expect(passport).toMatchObject({ tier: 'gold' });
    expect(before - (await balance(agent.accountId))).toBe(100n * HBAR);
    expect((await getJson(ps, `/did/${agent.did}`)).status).toBe(200);
  });

  it('a delivery that fails for good burns the minted NFT and refunds the payment', async () => {
    const agent = ps.agents[5];
    const before = await balance(agent.accountId);
    const supplyBefore = (await tokenNfts()).length;
    // The delivery fails with a final ledger status.
    hooks.beforeDeliver = async () => {
      throw ApplicationFailure.create({ message: 'simulated final delivery failure', type: 'LedgerError.ACCOUNT_FROZEN_FOR_TOKEN', nonRetryable: true });
    };
    try {
      const r = await paidPost(ps, agent, '/passport/request', { tier: 'silver' });
      expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([502, 'execution_failed']);
      expect(r.body.refund).toBe('refunded');
    } finally {
      hooks.beforeDeliver = undefined;
    }
    expect(await balance(agent.accountId)).toBe(before);
    expect(await nftsOf(agent.accountId)).toHaveLength(0);
    // The NFT was minted, then burned: the mirror shows that serial deleted, and circulation is unchanged.
    const [mint] = await ps.sql`select receipt from ledger_submissions where idempotency_key like ${`%passport:local:${agent.accountId}/%/mint`}`;
    const serial = Number((mint.receipt as { serials: string[] }).serials[0]);
    const nft = await ps.stack.ledger.mirror.getNft(ps.stack.deployment.passportTokenId, serial);
    expect(nft).toMatchObject({ serial_number: serial, deleted: true });
    expect((await tokenNfts()).length).toBe(supplyBefore);
    const burns = await ps.sql`select status from ledger_submissions where idempotency_key like ${`%passport:local:${agent.accountId}/%/burn`}`;
    expect(burns.map((b) => b.status)).toEqual(['succeeded']);
  });

  it('a request whose workflow outlasts the bounded wait answers 202 with a link to poll, then the passport appears there', async () => {
    const agent = ps.agents[4];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    hooks.beforeMint = () => released; // the mint waits until the test lets it go
    const waitMs = ps.state.workflowWaitMs;
    ps.state.workflowWaitMs = 500;
    try {
      const r = await paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
      expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([202, 'request_pending']);
      const poll = r.headers.get('location');
      expect(poll).toBe(`/passport/address/${agent.accountId}`);
      expect(r.body._links.poll.href).toBe(poll);
      expect((await getJson(ps, poll!)).body.passports).toEqual([]);
    } finally {
      ps.state.workflowWaitMs = waitMs;
      hooks.beforeMint = undefined;
      release();
    }
    const passport = await waitForPassport(ps, agent.accountId);
    expect(passport).toMatchObject({ tier: 'bronze', owner: agent.accountId, active: true });
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
  });

  it('passportRefund pays a settled payment back exactly once, even when started twice', async () => {
    const agent = ps.agents[3];
    const paymentTransactionId = `${agent.accountId}@1700000000.000000042`;
    await insertPayment(ps.sql, {
      transactionId: paymentTransactionId,
      network: 'hedera:local',
      payer: agent.accountId,
      payTo: ps.stack.deployment.payTo,
      amountTinybars: 2n * HBAR,
      resource: '/passport/request',
      status: 'settled',
    });
    const before = await balance(agent.accountId);
    const run = async () => {
      const handle = await startWorkflow(ps.t.client, passportRefundContract, { paymentTransactionId, reason: 'test', timings: ps.state.timings }, {
        taskQueue: ps.t.taskQueue,
        workflowId: ps.workflowId(passportRefundWorkflowId(paymentTransactionId)),
      });
      return handle.result() as Promise<{ refundTransactionId: string; amountTinybars: string }>;
    };
    const first = await run();
    const second = await run();
    expect(second.refundTransactionId).toBe(first.refundTransactionId);
    expect(first.amountTinybars).toBe((2n * HBAR).toString());
    expect((await balance(agent.accountId)) - before).toBe(2n * HBAR);
    expect((await findPaymentByTransactionId(ps.sql, paymentTransactionId))?.status).toBe('refunded');
    await recordFixture(ps, ps.workflowId(passportRefundWorkflowId(paymentTransactionId)), 'passportRefund');
  });
});
