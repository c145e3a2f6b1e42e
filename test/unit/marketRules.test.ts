// The refusal rules the marketplace API (api/market/) and the taskLifecycle workflow both apply,
// written once in domain/market.ts and domain/ledgerTransaction.ts (issue 21 item 3): one message
// each, whichever side refuses.
import { describe, expect, it } from 'vitest';
import { AccountId, ScheduleId, ScheduleSignTransaction, TransactionId, type Transaction } from '@hashgraph/sdk';
import { v7 as uuidv7 } from 'uuid';
import {
  completionRefusal,
  deliveryRefusal,
  directPaymentRefusal,
  escrowReleaseRefusal,
  paymentMemo,
  pendingScheduleIds,
  postedTask,
  postingRefusal,
  RESULT_BODY_MAX_BYTES,
  taskPayment,
  type TaskRecord,
} from '../../domain/market.js';
import { directPaymentBytesProblem, scheduleSignsProblem } from '../../domain/ledgerTransaction.js';
import { buildPayment } from '../../ledger/transferCheck.js';

const NODE = '0.0.3';
const OPERATOR = '0.0.2';
const b64 = (tx: Transaction) => Buffer.from(tx.toBytes()).toString('base64');

function task(over: Partial<TaskRecord> = {}): TaskRecord {
  const t = postedTask(
    {
      taskId: uuidv7(), title: 't', description: '', priceHbar: 2, priceTinybars: '200000000', capabilities: [], posterDid: 'did:hedera:local:0.0.1001',
      verifierType: 'none', verifierConfig: null, deadline: null, feeBps: 250, escrow: true,
    },
    new Date(0).toISOString(),
  );
  return { ...t, ...over };
}

function scheduleSign(scheduleId: string): string {
  return b64(
    new ScheduleSignTransaction()
      .setScheduleId(ScheduleId.fromString(scheduleId))
      .setTransactionId(TransactionId.generate(AccountId.fromString(OPERATOR)))
      .setNodeAccountIds([AccountId.fromString(NODE)])
      .freeze(),
  );
}

describe('delivery', () => {
  it('needs resultBody (at most RESULT_BODY_MAX_BYTES) or an IPFS reference', () => {
    expect(deliveryRefusal({})).toMatchObject({ status: 400, code: 'invalid_request', message: 'A result is missing: send resultBody or resultIpfs' });
    expect(deliveryRefusal({ resultBody: 'x'.repeat(RESULT_BODY_MAX_BYTES + 1) })?.message).toBe(`resultBody is over ${RESULT_BODY_MAX_BYTES} bytes`);
    expect(deliveryRefusal({ resultIpfs: 'https://example.com' })?.message).toBe('resultIpfs is not an IPFS reference');
    expect(deliveryRefusal({ resultBody: 'done' })).toBeNull();
    expect(deliveryRefusal({ resultIpfs: 'ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi' })).toBeNull();
  });
});

describe('posting', () => {
  it('refuses the post whose escrow schedule could not be created, and only that one', () => {
    expect(postingRefusal(task({ status: 'cancelled', escrowStatus: 'none', scheduleId: null }))).toMatchObject({ status: 400, message: 'The escrow schedule could not be created for this poster' });
    expect(postingRefusal(task({ status: 'posted', escrowStatus: 'scheduled', scheduleId: '0.0.5001' }))).toBeNull();
    expect(postingRefusal(task({ status: 'cancelled', escrowStatus: 'cancelled', scheduleId: '0.0.5001' }))).toBeNull();
  });
});

describe('completion: escrow or not', () => {
  it('an escrow task is released with the poster key and takes no transfer', () => {
    const t = task({ status: 'delivered', escrowStatus: 'scheduled', scheduleId: '0.0.5001' });
    expect(completionRefusal(t, { posterSignature: false, transfer: true })?.message).toMatch(/posterPrivateKey is required/);
    expect(completionRefusal(t, { posterSignature: true, transfer: true })?.message).toMatch(/are not accepted/);
    expect(completionRefusal(t, { posterSignature: true, transfer: false })).toBeNull();
  });
  it('a task without escrow is paid with a signed transfer', () => {
    const t = task({ escrow: false, escrowStatus: 'none' });
    expect(completionRefusal(t, { posterSignature: false, transfer: false })?.message).toMatch(/^Payment fields are missing/);
    expect(completionRefusal(t, { posterSignature: false, transfer: true })).toBeNull();
    expect(directPaymentRefusal(t)).toBeNull();
    expect(directPaymentRefusal(task({ scheduleId: '0.0.5001' }))?.message).toMatch(/is paid from escrow \(scheduleId 0\.0\.5001\)/);
  });
  it('an escrow whose schedule expired, or that is no longer pending, cannot be released', () => {
    expect(escrowReleaseRefusal(task({ escrowStatus: 'expired' }))?.message).toBe('The escrow schedule expired before it was signed');
    expect(escrowReleaseRefusal(task({ escrowStatus: 'refunded' }))?.message).toBe('The escrow is refunded');
    expect(escrowReleaseRefusal(task({ escrowStatus: 'funded' }))).toBeNull();
    expect(escrowReleaseRefusal(task({ escrow: false, escrowStatus: 'none' }))).toBeNull();
  });
  it('the pending schedules are the funding schedule while scheduled and a top-up', () => {
    expect(pendingScheduleIds(task({ escrowStatus: 'scheduled', scheduleId: '0.0.5001' }))).toEqual(['0.0.5001']);
    expect(pendingScheduleIds(task({ escrowStatus: 'funded', scheduleId: '0.0.5001', topUpScheduleId: '0.0.5002' }))).toEqual(['0.0.5002']);
    expect(pendingScheduleIds(task({ escrowStatus: 'expired', scheduleId: '0.0.5001' }))).toEqual([]);
  });
});

describe('client bytes', () => {
  it("the task's payment: the poster pays the price, the claimer gets price - fee, the treasury the fee, with the memo", () => {
    const t = task({ escrow: false });
    const p = taskPayment(t, { poster: '0.0.1001', claimer: '0.0.1002', treasury: '0.0.98' });
    expect(p).toEqual({ payer: '0.0.1001', claimer: '0.0.1002', treasury: '0.0.98', priceTinybars: 200_000_000n, feeTinybars: 5_000_000n, memo: paymentMemo(t.taskId) });
    const tx = buildPayment({ ...p, nodeAccountId: NODE });
    expect(directPaymentBytesProblem(b64(tx), p, { nodeAccountIds: [NODE] })).toBeNull();
    expect(directPaymentBytesProblem('not base64 of a transaction', p, {})).toMatchObject({ reason: 'invalid_bytes' });
    expect(directPaymentBytesProblem(b64(tx), { ...p, feeTinybars: 1n }, {})).toMatchObject({ reason: 'transfers_mismatch' });
  });
  it('a set of ScheduleSigns: each decodes, signs a different pending schedule, paid by the operator', () => {
    const want = { payer: OPERATOR, pendingScheduleIds: ['0.0.5001', '0.0.5002'] };
    const policy = { nodeAccountIds: [NODE] };
    const ok = [{ scheduleId: '0.0.5001', signedBytes: scheduleSign('0.0.5001') }, { scheduleId: '0.0.5002', signedBytes: scheduleSign('0.0.5002') }];
    expect(scheduleSignsProblem(ok, want, policy)).toBeNull();
    expect(scheduleSignsProblem([ok[0], ok[0]], want, policy)).toMatchObject({ scheduleId: '0.0.5001', problem: { message: 'it is sent twice' } });
    expect(scheduleSignsProblem([{ scheduleId: '0.0.5001', signedBytes: 'AAAA' }], want, policy)).toMatchObject({ problem: { reason: 'invalid_bytes' } });
    // bytes for one schedule sent as the signature of another
    expect(scheduleSignsProblem([{ scheduleId: '0.0.5002', signedBytes: scheduleSign('0.0.5001') }], want, policy)).toMatchObject({ scheduleId: '0.0.5002', problem: { reason: 'schedule_not_pending' } });
  });
});
