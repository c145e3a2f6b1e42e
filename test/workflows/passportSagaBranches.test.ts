/**
 * The passport issuance saga's branches (workflows/passportIssuance.ts, workflows/passportCommon.ts)
 * on a real worker and the dev server, with stubbed activities (issue 27 item 6): each branch is
 * reached in milliseconds, and the test asserts which activities ran, with which arguments, and the
 * workflow's result. The end-to-end runs against the ledger are in test/e2e/passports*.test.ts.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { WorkflowFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { Context } from '@temporalio/activity';
import type { Worker } from '@temporalio/worker';
import { startWorkflow } from '../../temporal/workflows.js';
import { passportIssuanceContract, passportIssuanceWorkflowId, type PassportIssuanceInput } from '../../workflows/contracts/passportIssuance.js';
import { connectTestTemporal, type TestTemporal } from '../support/temporal.js';

const workflowsPath = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'workflows', 'index.ts');

type Call = { name: string; arg: Record<string, unknown> };
/** What a stubbed activity does in the current test: answer, or throw (a final failure unless the test says otherwise). */
type Behaviour = Record<string, (arg: Record<string, unknown>, attempt: number) => unknown>;

const claim = { kind: 'issuance', network: 'localnet', accountId: '0.0.5005', did: 'did:hedera:localnet:0.0.5005', tier: 'silver', capabilities: ['api_call', 'payment'], endpoint: null };
const final = (type: string, message = `${type} (stubbed)`) => ApplicationFailure.nonRetryable(message, type);

const defaults: Behaviour = {
  claimOfRun: () => claim,
  settlePayment: () => ({ settled: true }),
  confirmSettlement: () => ({ confirmed: true }),
  mintPassport: () => ({ tokenId: '0.0.7007', serial: 42, transactionId: 'mint-tx' }),
  deliverPassport: () => ({ transactionId: 'deliver-tx' }),
  setPassportFrozen: () => ({ transactionId: 'freeze-tx' }),
  publishAudit: () => ({ transactionId: 'audit-tx', sequenceNumber: 1 }),
  recordPassport: () => ({ issuedAt: 1_700_000_000_000 }),
  burnUndeliveredPassport: () => ({ transactionId: 'burn-tx' }),
  refundPayment: () => ({ refundTransactionId: 'refund-tx', payer: '0.0.9009', amountTinybars: '100000000' }),
  releaseClaim: () => ({ released: true }),
};

describe('passport issuance saga branches (stubbed activities)', () => {
  let t: TestTemporal;
  let worker: Worker;
  let running: Promise<void>;
  let calls: Call[];
  let behaviour: Behaviour;
  let n = 0;

  beforeAll(async () => {
    t = await connectTestTemporal('saga');
    const activities = Object.fromEntries(
      Object.keys(defaults).map((name) => [
        name,
        async (arg: Record<string, unknown>) => {
          calls.push({ name, arg });
          return (behaviour[name] ?? defaults[name])(arg, Context.current().info.attempt);
        },
      ]),
    );
    worker = await t.createWorker({ workflowsPath, activities });
    running = worker.run();
  }, 120_000);
  afterAll(async () => {
    if (worker) {
      worker.shutdown();
      await running;
    }
    await t?.close();
  });
  beforeEach(() => {
    calls = [];
    behaviour = {};
  });

  /** Starts an issuance through its contract (the input bound to its workflow id) and awaits its result. */
  async function issue(over: Partial<PassportIssuanceInput> = {}) {
    n += 1;
    const accountId = `0.0.${5000 + n}`;
    const workflowId = `${passportIssuanceWorkflowId('localnet', accountId)}:${t.taskQueue}`;
    const input: PassportIssuanceInput = {
      network: 'localnet',
      accountId,
      did: `did:hedera:localnet:${accountId}`,
      tier: 'silver',
      capabilities: ['api_call', 'payment'],
      payment: { transactionId: `pay-${n}`, payer: '0.0.9009', amountTinybars: '100000000', paymentSignature: 'c2lnbmF0dXJl' },
      timings: { retryInitialMs: 10, retryMaximumMs: 20, ledgerMaxAttempts: 3, activityTimeoutMs: 10_000 },
      ...over,
    };
    const handle = await startWorkflow(t.client, passportIssuanceContract, input, { taskQueue: t.taskQueue, workflowId });
    return { workflowId, paymentTx: input.payment.transactionId, result: handle.result() };
  }
  const names = () => calls.map((c) => c.name);
  const argOf = (name: string) => calls.find((c) => c.name === name)?.arg;

  it('happy path: settles, confirms, mints, delivers, freezes, audits and records the passport', async () => {
    const { workflowId, paymentTx, result } = await issue();
    await expect(result).resolves.toEqual({
      status: 'issued',
      tokenId: '0.0.7007',
      serialNumber: 42,
      did: claim.did,
      accountId: claim.accountId,
      tier: 'silver',
      capabilities: ['api_call', 'payment'],
      issuedAt: 1_700_000_000_000,
      mintTransactionId: 'mint-tx',
      deliverTransactionId: 'deliver-tx',
      auditTransactionId: 'audit-tx',
    });
    expect(names()).toEqual(['claimOfRun', 'settlePayment', 'confirmSettlement', 'mintPassport', 'deliverPassport', 'setPassportFrozen', 'publishAudit', 'recordPassport']);
    const key = `${workflowId}/${paymentTx}`;
    expect(argOf('settlePayment')).toEqual({ paymentTransactionId: paymentTx, paymentSignature: 'c2lnbmF0dXJl' });
    expect(argOf('confirmSettlement')).toEqual({ paymentTransactionId: paymentTx, payer: '0.0.9009', amountTinybars: '100000000' });
    // the terms come from the run's claim, not from the input
    expect(argOf('mintPassport')).toEqual({ idempotencyKey: `${key}/mint`, tier: 'silver', capabilities: ['api_call', 'payment'] });
    expect(argOf('deliverPassport')).toEqual({ idempotencyKey: `${key}/deliver`, serial: 42, to: claim.accountId });
    expect(argOf('setPassportFrozen')).toEqual({ idempotencyKey: `${key}/freeze`, accountId: claim.accountId, frozen: true });
    expect(argOf('publishAudit')).toMatchObject({ idempotencyKey: `${key}/audit`, event: { type: 'passport.issued', did: claim.did, tokenId: '0.0.7007', serial: 42, tier: 'silver' } });
    expect(argOf('recordPassport')).toMatchObject({ paymentTransactionId: paymentTx, mintTransactionId: 'mint-tx', deliverTransactionId: 'deliver-tx', workflowId });
  });

  it('a settlement that fails for good releases the claim: nothing minted, nothing refunded', async () => {
    behaviour.settlePayment = () => {
      throw final('PaymentSettlementFailed', 'facilitator refused');
    };
    const { paymentTx, result } = await issue();
    await expect(result).resolves.toEqual({ status: 'released', failedStep: 'settle', reason: 'settle failed: PaymentSettlementFailed: facilitator refused' });
    expect(names()).toEqual(['claimOfRun', 'settlePayment', 'releaseClaim']);
    expect(argOf('releaseClaim')).toEqual({ paymentTransactionId: paymentTx, reason: 'settle failed: PaymentSettlementFailed: facilitator refused', failedStep: 'settle' });
  });

  it('any other final refusal of the settlement refunds the payment (the ledger may have taken it)', async () => {
    behaviour.settlePayment = () => {
      throw final('PaymentMismatch', 'amount differs');
    };
    const { paymentTx, result } = await issue();
    await expect(result).resolves.toEqual({ status: 'refunded', failedStep: 'settle', reason: 'settle failed: PaymentMismatch: amount differs', refundTransactionId: 'refund-tx' });
    expect(names()).toEqual(['claimOfRun', 'settlePayment', 'refundPayment']);
    expect(argOf('refundPayment')).toEqual({ paymentTransactionId: paymentTx, reason: 'settle failed: PaymentMismatch: amount differs', failedStep: 'settle' });
  });

  it('a refused confirmation with nothing to refund releases the claim', async () => {
    behaviour.confirmSettlement = () => {
      throw final('PaymentNotSettled', 'not on the ledger');
    };
    behaviour.refundPayment = () => {
      throw final('PaymentNotFound', 'no settled payment');
    };
    const { paymentTx, result } = await issue();
    const reason = 'confirmSettlement failed: PaymentNotSettled: not on the ledger';
    await expect(result).resolves.toEqual({ status: 'released', failedStep: 'confirmSettlement', reason });
    expect(names()).toEqual(['claimOfRun', 'settlePayment', 'confirmSettlement', 'refundPayment', 'releaseClaim']);
    expect(argOf('refundPayment')).toEqual({ paymentTransactionId: paymentTx, reason, failedStep: 'confirmSettlement' });
    expect(argOf('releaseClaim')).toEqual({ paymentTransactionId: paymentTx, reason: `${reason}; not refunded: PaymentNotFound: no settled payment`, failedStep: 'confirmSettlement' });
  });

  it('a refused confirmation of a settled payment refunds it', async () => {
    behaviour.confirmSettlement = () => {
      throw final('PaymentMismatch', 'payer differs');
    };
    const { result } = await issue();
    await expect(result).resolves.toEqual({ status: 'refunded', failedStep: 'confirmSettlement', reason: 'confirmSettlement failed: PaymentMismatch: payer differs', refundTransactionId: 'refund-tx' });
    expect(names()).not.toContain('mintPassport');
  });

  it('a mint that fails for good refunds the payment, with nothing to burn', async () => {
    behaviour.mintPassport = () => {
      throw final('INVALID_TOKEN_ID', 'final ledger status');
    };
    const { paymentTx, result } = await issue();
    const reason = 'mint failed: INVALID_TOKEN_ID: final ledger status';
    await expect(result).resolves.toEqual({ status: 'refunded', failedStep: 'mint', reason, refundTransactionId: 'refund-tx' });
    expect(names()).toEqual(['claimOfRun', 'settlePayment', 'confirmSettlement', 'mintPassport', 'refundPayment']);
    expect(argOf('refundPayment')).toEqual({ paymentTransactionId: paymentTx, reason, failedStep: 'mint' });
  });

  it('a mint whose bounded retries are used up counts as failed for good and refunds', async () => {
    behaviour.mintPassport = (_arg, attempt) => {
      throw ApplicationFailure.retryable(`busy (attempt ${attempt})`, 'BUSY');
    };
    const { result } = await issue();
    await expect(result).resolves.toMatchObject({ status: 'refunded', failedStep: 'mint', reason: 'mint failed: BUSY: busy (attempt 3)' });
    // ledgerMaxAttempts: 3 in the input's timings
    expect(names().filter((x) => x === 'mintPassport')).toHaveLength(3);
    expect(names().at(-1)).toBe('refundPayment');
  });

  it('a delivery that fails for good burns the minted passport, then refunds', async () => {
    behaviour.deliverPassport = () => {
      throw final('ACCOUNT_FROZEN_FOR_TOKEN', 'final ledger status');
    };
    const { workflowId, paymentTx, result } = await issue();
    const reason = 'deliver failed: ACCOUNT_FROZEN_FOR_TOKEN: final ledger status';
    await expect(result).resolves.toEqual({ status: 'refunded', failedStep: 'deliver', reason, refundTransactionId: 'refund-tx' });
    expect(names()).toEqual(['claimOfRun', 'settlePayment', 'confirmSettlement', 'mintPassport', 'deliverPassport', 'burnUndeliveredPassport', 'refundPayment']);
    expect(argOf('burnUndeliveredPassport')).toEqual({ idempotencyKey: `${workflowId}/${paymentTx}/burn`, serial: 42 });
    expect(argOf('refundPayment')).toEqual({ paymentTransactionId: paymentTx, reason, failedStep: 'deliver' });
  });

  it('a payment that pays for an upgrade, not this issuance, fails the run before anything moves', async () => {
    behaviour.claimOfRun = () => ({ ...claim, kind: 'upgrade' });
    const { result } = await issue();
    const err = await result.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect(((err as WorkflowFailedError).cause as ApplicationFailure).type).toBe('UnboundMessage');
    expect(names()).toEqual(['claimOfRun']);
  });

  it('a claim the activity refuses as another run\'s fails the run before anything moves', async () => {
    behaviour.claimOfRun = () => {
      throw final('NotOwnClaim', 'pays for a request of another workflow');
    };
    const { result } = await issue();
    const err = await result.catch((e: unknown) => e);
    expect(((err as WorkflowFailedError).cause as ApplicationFailure).type).toBe('UnboundMessage');
    expect(names()).toEqual(['claimOfRun']);
  });
});
