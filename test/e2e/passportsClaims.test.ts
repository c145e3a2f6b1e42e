// Claims never stay pending (issue 8): whatever way an issuance or upgrade fails after the API
// claimed the wallet (or passport) and its workflow settled the payment, the claim ends final and the
// payment is refunded exactly once (ledger balances from the mirror are the judge), and the wallet can
// buy again. A workflow that cannot be started takes nothing (issue 23: the workflow settles) and the
// same payment retried issues the passport. An upgrade already pending is refused before any payment.
// A facilitator answering in the other id forms (mirror transaction id, payer with prefix or checksum)
// still gives one payment.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountCreateTransaction, Hbar, PrivateKey } from '@hashgraph/sdk';
import { decodePaymentResponseHeader } from '@x402/core/http';
import type { FacilitatorClient } from '@x402/core/server';
import type { Client } from '@temporalio/client';
import { findPaymentByTransactionId, insertPayment } from '../../db/queries/payments.js';
import { findIssuance, findUpgrade } from '../../db/queries/passports.js';
import { recordSecret } from '../support/secrets.js';
import type { TestAgent } from '../support/signing.js';
import type { Tier } from '../../domain/tiers.js';
import { createPaymentSettlementActivities, type SettlePaymentInput } from '../../activities/ledger/paymentSettlement.js';
import { paidPost, recordFixture, signedPost, startPassportStack, waitForPassport, type PaidResponse, type PassportStack } from './passportHarness.js';

const HBAR = 100_000_000n;
const PRICE: Record<Tier, bigint> = { bronze: 5n * HBAR, silver: 25n * HBAR, gold: 100n * HBAR, platinum: 500n * HBAR };

describe('claims of paid passport requests never stay pending', () => {
  let ps: PassportStack;
  const hooks: {
    beforeMetadata?: () => Promise<void>;
    afterMetadata?: () => Promise<void>;
    beforeMint?: () => Promise<void>;
    settle?: (input: SettlePaymentInput) => ReturnType<PassportStack['activities']['settlePayment']>;
  } = {};

  const balance = async (accountId: string) => (await ps.stack.ledger.mirror.getHbarBalance(accountId))!;
  const nftsOf = (accountId: string) => ps.stack.ledger.mirror.getAccountNfts(accountId, { tokenId: ps.stack.deployment.passportTokenId });
  const refundsOf = async (paymentTransactionId: string) =>
    (await ps.sql`select status from ledger_submissions where idempotency_key = ${`refund:${paymentTransactionId}`}`).map((r) => r.status);
  const issuedOrPolled = async (r: PaidResponse, accountId: string) => {
    expect([200, 202], JSON.stringify(r.body)).toContain(r.status);
    return r.status === 200 ? r.body : waitForPassport(ps, accountId);
  };
  /** A 502 naming the failed step and its refund; the wallet is paid back exactly once, nothing issued. */
  const expectRefundedOnce = async (r: PaidResponse, accountId: string, balanceBefore: bigint, failedStep: string) => {
    expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([502, 'execution_failed']);
    expect(r.body).toMatchObject({ failedStep, refund: 'refunded' });
    expect(r.body.hint).toContain(`was refunded in ${r.body.refundTransactionId}`);
    const paymentTransactionId = r.body.paymentTransactionId as string;
    expect(await balance(accountId)).toBe(balanceBefore);
    expect(await refundsOf(paymentTransactionId)).toEqual(['succeeded']);
    expect((await findPaymentByTransactionId(ps.sql, paymentTransactionId))?.status).toBe('refunded');
    expect((await findIssuance(ps.sql, paymentTransactionId))?.status).toBe('refunded');
    expect(await nftsOf(accountId)).toHaveLength(0);
    return paymentTransactionId;
  };
  /** An activity hook that stops at `reached` until `release()`. */
  const blocker = () => {
    let arrive!: () => void;
    let release!: () => void;
    const reached = new Promise<void>((resolve) => (arrive = resolve));
    const released = new Promise<void>((resolve) => (release = resolve));
    const hook = async () => {
      arrive();
      await released;
    };
    return { reached, release, hook };
  };
  /** Makes the Temporal client's next start of `workflowType` fail, as an unreachable frontend would. */
  const failNextStart = (workflowType: string) => {
    const workflow = ps.t.client.workflow as Client['workflow'];
    const start = workflow.start.bind(workflow);
    let failed = false;
    workflow.start = (async (type: unknown, options: unknown) => {
      if (!failed && type === workflowType) {
        failed = true;
        throw new Error('simulated: the Temporal frontend is unreachable');
      }
      return start(type as never, options as never);
    }) as typeof workflow.start;
    return () => {
      workflow.start = start;
      return failed;
    };
  };

  beforeAll(async () => {
    ps = await startPassportStack('claims');
    await ps.startWorker({
      mintPassport: async (input) => {
        await hooks.beforeMint?.();
        return ps.activities.mintPassport(input);
      },
      updatePassportMetadata: async (input) => {
        await hooks.beforeMetadata?.();
        const updated = await ps.activities.updatePassportMetadata(input);
        await hooks.afterMetadata?.();
        return updated;
      },
      settlePayment: (input) => (hooks.settle ?? ps.activities.settlePayment)(input),
    });
  });
  afterAll(async () => {
    await ps?.sql.unsafe('drop trigger if exists claims_test_unsettle on payments; drop function if exists claims_test_unsettle()').catch(() => undefined);
    await ps?.stop();
  });

  it('confirmSettlement refusing (the payment no longer recorded settled): refunded exactly once, claim final, the wallet buys again', async () => {
    const agent = ps.agents[0];
    // The payment's settled record is lost (it stays 'verified'), as a lost settlement record would make
    // it. Set-up adapted for issue 23: the workflow records the settlement after the claim, so the
    // trigger sits on that update of payments instead of on the claim's insert.
    await ps.sql.unsafe(`
      create function claims_test_unsettle() returns trigger language plpgsql as $$
      begin
        if new.status = 'settled' and new.payer = '${agent.accountId}' then new.status := 'verified'; end if;
        return new;
      end $$;
      create trigger claims_test_unsettle before update on payments for each row execute function claims_test_unsettle();`);
    const before = await balance(agent.accountId);
    let r: PaidResponse;
    try {
      r = await paidPost(ps, agent, '/passport/request', { tier: 'silver' });
    } finally {
      await ps.sql.unsafe('drop trigger claims_test_unsettle on payments; drop function claims_test_unsettle()');
    }
    const paymentTransactionId = await expectRefundedOnce(r, agent.accountId, before, 'confirmSettlement');
    await recordFixture(ps, ps.workflowId(`passport:local:${agent.accountId}`), 'passportIssuanceUnconfirmedPayment');

    // the same payment retried: the same answer, no second refund
    const retried = await signedPost(ps, agent, '/passport/request', { tier: 'silver' }, { 'payment-signature': r.paymentSignature! });
    expect([retried.status, retried.body.code, retried.body.refundTransactionId]).toEqual([502, 'execution_failed', r.body.refundTransactionId]);
    expect(await refundsOf(paymentTransactionId)).toEqual(['succeeded']);

    const again = await paidPost(ps, agent, '/passport/request', { tier: 'silver' });
    expect(await issuedOrPolled(again, agent.accountId)).toMatchObject({ tier: 'silver' });
    expect(before - (await balance(agent.accountId))).toBe(PRICE.silver);
  });

  it('the workflow start failing after the claim: nothing is taken (503, retryable); the same payment retried issues the passport, charged once', async () => {
    // Issue 23 changed this case's outcome: the workflow settles, so a workflow that cannot be started
    // leaves the payment unsettled (before: settled by the API, then refunded by passportRefund).
    const agent = ps.agents[1];
    const before = await balance(agent.accountId);
    const restore = failNextStart('passportIssuance');
    let r: PaidResponse;
    try {
      r = await paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
    } finally {
      expect(restore()).toBe(true);
    }
    expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([503, 'service_unavailable']);
    expect(r.body.hint).toContain('has not been settled');
    expect(await balance(agent.accountId)).toBe(before);
    const [payment] = await ps.sql`select transaction_id, status from payments where payer = ${agent.accountId}`;
    expect(payment.status).toBe('verified');
    expect((await findIssuance(ps.sql, payment.transaction_id))?.status).toBe('pending');

    const retried = await signedPost(ps, agent, '/passport/request', { tier: 'bronze' }, { 'payment-signature': r.paymentSignature! });
    expect(await issuedOrPolled({ ...retried, paymentSignature: r.paymentSignature }, agent.accountId)).toMatchObject({ tier: 'bronze' });
    expect(before - (await balance(agent.accountId))).toBe(PRICE.bronze);
    expect(await refundsOf(payment.transaction_id)).toEqual([]);
    expect((await findPaymentByTransactionId(ps.sql, payment.transaction_id))?.status).toBe('settled');
  });

  it('the workflow terminated while the request waits: the claim ends refunded, the payment paid back once, the wallet buys again', async () => {
    const agent = ps.agents[5];
    const before = await balance(agent.accountId);
    const { reached: atMint, release: unblock, hook } = blocker();
    hooks.beforeMint = async () => {
      await hook();
      throw new Error('attempt abandoned by the test');
    };
    let r: PaidResponse;
    try {
      const request = paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
      await atMint;
      await ps.t.client.workflow.getHandle(ps.workflowId(`passport:local:${agent.accountId}`)).terminate('test: an operator terminates the run');
      r = await request;
    } finally {
      hooks.beforeMint = undefined;
      unblock();
    }
    await expectRefundedOnce(r, agent.accountId, before, 'workflow');

    const again = await paidPost(ps, agent, '/passport/request', { tier: 'bronze' });
    expect(await issuedOrPolled(again, agent.accountId)).toMatchObject({ tier: 'bronze' });
    expect(before - (await balance(agent.accountId))).toBe(PRICE.bronze);
  });

  it('a workflow terminated after it wrote to the ledger is finished, not refunded: the upgrade applies, charged once', async () => {
    const agent = ps.agents[1]; // bronze since the start-failure test
    const [owned] = await ps.sql`select token_id, serial from passports where account_id = ${agent.accountId} and revoked_at is null`;
    const before = await balance(agent.accountId);
    const { reached: updated, release, hook } = blocker();
    hooks.afterMetadata = hook;
    let r: PaidResponse;
    try {
      const request = paidPost(ps, agent, `/passport/${owned.token_id}/${owned.serial}/upgrade`, { did: agent.did, tier: 'silver' });
      await updated; // the metadata is rewritten on the ledger; the run has not recorded it yet
      hooks.afterMetadata = undefined;
      await ps.t.client.workflow.getHandle(ps.workflowId(`passport-upgrade:${owned.token_id}:${owned.serial}:silver`)).terminate('test: terminated after the ledger write');
      r = await request;
    } finally {
      hooks.afterMetadata = undefined;
      release();
    }
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ upgraded: true, oldTier: 'bronze', newTier: 'silver' });
    expect(before - (await balance(agent.accountId))).toBe(PRICE.silver - PRICE.bronze);
    const [upgrade] = await ps.sql`select payment_transaction_id, status from passport_upgrades where token_id = ${owned.token_id} and serial = ${owned.serial}`;
    expect(upgrade.status).toBe('upgraded');
    expect(await refundsOf(upgrade.payment_transaction_id)).toEqual([]);
    const updates = await ps.sql`select status from ledger_submissions where idempotency_key like ${`%/${upgrade.payment_transaction_id}/metadata`}`;
    expect(updates.map((u) => u.status)).toEqual(['succeeded']);
  });

  it('a stale pending claim (the API died before starting its workflow) no longer blocks the wallet; an unsettled payment is released, not refunded', async () => {
    const agent = ps.agents[2];
    // a claim left behind two minutes ago, its payment never confirmed and not on the ledger
    const paymentTransactionId = `${agent.accountId}@1700000000.000000077`;
    await insertPayment(ps.sql, {
      transactionId: paymentTransactionId,
      network: 'hedera:local',
      payer: agent.accountId,
      payTo: ps.stack.deployment.payTo,
      amountTinybars: PRICE.gold,
      resource: '/passport/request',
      status: 'verified',
    });
    await ps.sql`
      insert into passport_issuances (payment_transaction_id, workflow_id, network, account_id, did, tier, capabilities, status, created_at)
      values (${paymentTransactionId}, ${ps.workflowId(`passport:local:${agent.accountId}`)}, 'local', ${agent.accountId}, ${agent.did}, 'gold', '[]'::jsonb, 'pending', now() - interval '2 minutes')`;
    const before = await balance(agent.accountId);
    const r = await paidPost(ps, agent, '/passport/request', { tier: 'gold' });
    expect(await issuedOrPolled(r, agent.accountId)).toMatchObject({ tier: 'gold' });
    expect(before - (await balance(agent.accountId))).toBe(PRICE.gold);
    const stale = await findIssuance(ps.sql, paymentTransactionId);
    expect(stale?.status).toBe('failed');
    expect(stale?.refund_transaction_id).toBeNull();
    expect(await refundsOf(paymentTransactionId)).toEqual([]);
  });

  it('an upgrade already pending for a passport refuses a second one before any payment', async () => {
    const agent = ps.agents[3];
    const bought = await issuedOrPolled(await paidPost(ps, agent, '/passport/request', { tier: 'bronze' }), agent.accountId);
    const path = `/passport/${bought.tokenId}/${bought.serialNumber}/upgrade`;
    const { reached: atMetadata, release, hook } = blocker();
    hooks.beforeMetadata = hook;
    const waitMs = ps.state.workflowWaitMs;
    ps.state.workflowWaitMs = 1_000;
    try {
      const before = await balance(agent.accountId);
      const first = paidPost(ps, agent, path, { did: agent.did, tier: 'gold' });
      await atMetadata;
      const paidFirst = await balance(agent.accountId);
      expect(before - paidFirst).toBe(PRICE.gold - PRICE.bronze);

      const second = await signedPost(ps, agent, path, { did: agent.did, tier: 'platinum' });
      expect([second.status, second.body.code], JSON.stringify(second.body)).toEqual([400, 'passport_upgrade_not_eligible']);
      expect(second.body.error).toContain('in progress');
      expect(second.headers.get('payment-required')).toBeNull();
      expect(await balance(agent.accountId)).toBe(paidFirst);
      const upgrades = await ps.sql`select status from passport_upgrades where token_id = ${bought.tokenId} and serial = ${bought.serialNumber}`;
      expect(upgrades.map((u) => u.status)).toEqual(['pending']);

      release();
      const r = await first;
      expect([200, 202], JSON.stringify(r.body)).toContain(r.status);
    } finally {
      release();
      hooks.beforeMetadata = undefined;
      ps.state.workflowWaitMs = waitMs;
    }
    for (let i = 0; i < 120; i++) {
      const [row] = await ps.sql`select status from passport_upgrades where token_id = ${bought.tokenId} and serial = ${bought.serialNumber}`;
      if (row.status !== 'pending') break;
      await new Promise((r) => setTimeout(r, 250));
    }
    const [done] = await ps.sql`select status, payment_transaction_id from passport_upgrades where token_id = ${bought.tokenId} and serial = ${bought.serialNumber}`;
    expect(done.status).toBe('upgraded');
    expect((await findUpgrade(ps.sql, done.payment_transaction_id))?.new_tier).toBe('gold');
  });

  it('a settlement that fails for good (the payer cannot cover the price) takes nothing: 400 passport_payment_failed, claim released, the same payment answers the same', async () => {
    // an account holding 1 HBAR passes /verify (a well-formed, signed transfer) but cannot pay 5 HBAR
    const key = PrivateKey.generateED25519();
    const created = await new AccountCreateTransaction().setKeyWithoutAlias(key.publicKey).setInitialBalance(new Hbar(1)).setMaxAutomaticTokenAssociations(10).execute(ps.stack.clients.client);
    const accountId = (await created.getReceipt(ps.stack.clients.client)).accountId!.toString();
    recordSecret(`claims test account ${accountId} key`, key.toStringDer());
    const poor: TestAgent = { accountId, did: `did:hedera:local:${accountId}`, keyType: 'ED25519', privateKey: key.toStringDer() };
    const before = await balance(accountId);
    const r = await paidPost(ps, poor, '/passport/request', { tier: 'bronze' });
    expect([r.status, r.body.code], JSON.stringify(r.body)).toEqual([400, 'passport_payment_failed']);
    expect(r.body.error).toMatch(/^Settlement failed: /);
    expect(r.body.hint).toMatch(/^Nothing was taken/);
    expect(r.headers.get('payment-required')).toBeTruthy();
    expect(await balance(accountId)).toBe(before);
    const [payment] = await ps.sql`select transaction_id, status from payments where payer = ${accountId}`;
    expect(payment.status).toBe('failed');
    const claim = await findIssuance(ps.sql, payment.transaction_id);
    expect([claim?.status, claim?.failed_step]).toEqual(['failed', 'settle']);
    await recordFixture(ps, ps.workflowId(`passport:local:${accountId}`), 'passportIssuanceSettleRefused');

    const retried = await signedPost(ps, poor, '/passport/request', { tier: 'bronze' }, { 'payment-signature': r.paymentSignature! });
    expect([retried.status, retried.body.code, retried.body.failedStep], JSON.stringify(retried.body)).toEqual([400, 'passport_payment_failed', 'settle']);
    expect(await balance(accountId)).toBe(before);
    expect(await refundsOf(payment.transaction_id)).toEqual([]);
  });

  it('a facilitator answering with the mirror transaction id and a prefixed or checksummed payer: one payment, one passport, an idempotent retry', async () => {
    const agent = ps.agents[4];
    const gate = ps.app.x402 as unknown as { facilitator: FacilitatorClient };
    const real = gate.facilitator;
    const mirrorForm = (id: string) => id.replace(/^(\d+\.\d+\.\d+)@(\d+)\.(\d+)$/, '$1-$2-$3');
    // the API verifies through it, the worker's settle step settles through it (set-up adapted for issue 23)
    const odd: FacilitatorClient = {
      getSupported: () => real.getSupported(),
      verify: async (payload, requirements) => {
        const v = await real.verify(payload, requirements);
        return v.payer ? { ...v, payer: `hedera:local:${v.payer}` } : v;
      },
      settle: async (payload, requirements) => {
        const s = await real.settle(payload, requirements);
        return { ...s, transaction: mirrorForm(s.transaction), ...(s.payer ? { payer: `${s.payer}-abcde` } : {}) };
      },
    };
    gate.facilitator = odd;
    hooks.settle = createPaymentSettlementActivities({ sql: ps.sql, ledger: ps.ledgerDeps, facilitator: odd }).settlePayment;
    try {
      const before = await balance(agent.accountId);
      const r = await paidPost(ps, agent, '/passport/request', { tier: 'silver' });
      const passport = await issuedOrPolled(r, agent.accountId);
      expect(passport).toMatchObject({ tier: 'silver' });
      const receipt = decodePaymentResponseHeader(r.headers.get('payment-response')!);
      expect(receipt.transaction).toMatch(/^\d+\.\d+\.\d+@\d+\.\d{9}$/);
      expect(receipt.payer).toBe(agent.accountId);

      const payments = await ps.sql`select transaction_id, payer, status from payments where payer = ${agent.accountId}`;
      expect(payments.map((p) => [p.transaction_id, p.status])).toEqual([[receipt.transaction, 'settled']]);
      expect((await findIssuance(ps.sql, receipt.transaction))?.status).toBe('issued');

      // the same payment again: the same passport, no second charge
      const retried = await signedPost(ps, agent, '/passport/request', { tier: 'silver' }, { 'payment-signature': r.paymentSignature! });
      expect(retried.status, JSON.stringify(retried.body)).toBe(200);
      expect(retried.body).toMatchObject({ tokenId: passport.tokenId, serialNumber: passport.serialNumber });
      expect(before - (await balance(agent.accountId))).toBe(PRICE.silver);
      expect(await nftsOf(agent.accountId)).toHaveLength(1);
    } finally {
      gate.facilitator = real;
      hooks.settle = undefined;
    }
  });
});
