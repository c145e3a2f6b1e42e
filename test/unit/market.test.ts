// domain/market.ts: the SPEC 3 state machine and its statuses, fee math in integer tinybars, the
// field limits and UUIDv7 task ids.
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { v7 as uuidv7 } from 'uuid';
import {
  ALLOWED_FROM,
  hbarToTinybars,
  increaseRefusal,
  isResultBodyTooLarge,
  isResultIpfs,
  isTaskId,
  marketFee,
  parseTaskMessage,
  payoutOf,
  refusalOf,
  repeatsStep,
  TASK_OPERATIONS,
  TASK_STATUSES,
  tinybarsToHbar,
  type TaskRecord,
} from '../../domain/market.js';

const poster = 'did:hedera:local:0.0.1001';
const claimer = 'did:hedera:local:0.0.1002';

function task(over: Partial<TaskRecord> = {}): TaskRecord {
  return {
    taskId: uuidv7(), title: 't', description: '', priceHbar: 2, priceTinybars: '200000000', capabilities: [], status: 'posted',
    posterDid: poster, claimerDid: null, scheduleId: null, topUpScheduleId: null, escrowStatus: 'scheduled', escrowedTinybars: '0',
    verificationAttempts: 0, verifierType: 'none', verifierConfig: null, deadline: null, resultBody: null, resultIpfs: null,
    resultSha256: null, paymentTxId: null, refundTxId: null, feeBps: 250, escrow: true, createdAt: '', updatedAt: '', ...over,
  };
}

describe('task state machine (SPEC 3)', () => {
  it('allows each operation only from its statuses; a wrong status is 409 for claim and deliver, 400 for the rest', () => {
    for (const op of TASK_OPERATIONS) {
      for (const status of TASK_STATUSES) {
        const caller = op === 'claim' ? claimer : op === 'deliver' ? claimer : poster;
        const r = refusalOf(op, task({ status, claimerDid: claimer }), op === 'verify' ? undefined : caller);
        if (ALLOWED_FROM[op].includes(status)) expect(r, `${op} from ${status}`).toBeNull();
        else {
          expect(r?.kind, `${op} from ${status}`).toBe('wrong_status');
          expect(r?.status).toBe(op === 'claim' || op === 'deliver' ? 409 : 400);
        }
      }
    }
    expect(refusalOf('claim', task({ status: 'claimed' }))?.code).toBe('market_task_already_claimed');
  });

  it('checks the caller: only the claimer delivers (403), only the poster completes, cancels or raises (403), the poster cannot claim (400)', () => {
    expect(refusalOf('deliver', task({ status: 'claimed', claimerDid: claimer }), poster)).toMatchObject({ status: 403, code: 'market_task_not_claimed_by_agent' });
    for (const op of ['cancel', 'increaseReward'] as const) expect(refusalOf(op, task(), claimer)).toMatchObject({ status: 403, code: 'auth_did_mismatch' });
    expect(refusalOf('complete', task({ status: 'delivered', claimerDid: claimer }), claimer)).toMatchObject({ status: 403 });
    expect(refusalOf('claim', task(), poster)).toMatchObject({ status: 400 });
  });

  it('increase-reward needs a valid, higher price', () => {
    expect(increaseRefusal(task(), 2)?.status).toBe(400);
    expect(increaseRefusal(task(), 1.5)?.status).toBe(400);
    expect(increaseRefusal(task(), 2.000000001)?.status).toBe(400);
    expect(increaseRefusal(task(), 2.00000001)).toBeNull();
  });

  it('a repeated step (same party, same step, same result) is recognised only where the step was taken, which refusalOf refuses', () => {
    const other = 'did:hedera:local:0.0.1003';
    const delivered = task({ status: 'delivered', claimerDid: claimer, resultBody: 'r', resultIpfs: null });
    expect(repeatsStep('claim', task({ status: 'claimed', claimerDid: claimer }), { callerDid: claimer })).toBe(true);
    expect(repeatsStep('claim', delivered, { callerDid: claimer })).toBe(true);
    expect(repeatsStep('claim', delivered, { callerDid: other })).toBe(false);
    expect(repeatsStep('claim', task({ status: 'completed', claimerDid: claimer }), { callerDid: claimer })).toBe(false);
    expect(repeatsStep('deliver', delivered, { callerDid: claimer, resultBody: 'r' })).toBe(true);
    expect(repeatsStep('deliver', delivered, { callerDid: claimer, resultBody: 'other' })).toBe(false);
    expect(repeatsStep('deliver', delivered, { callerDid: claimer, resultIpfs: 'ipfs://x' })).toBe(false);
    expect(repeatsStep('deliver', delivered, { callerDid: other, resultBody: 'r' })).toBe(false);
    expect(repeatsStep('complete', task({ status: 'completed', claimerDid: claimer }), { callerDid: poster })).toBe(true);
    expect(repeatsStep('complete', task({ status: 'completed', claimerDid: claimer }), { callerDid: claimer })).toBe(false);
    expect(repeatsStep('cancel', task({ status: 'cancelled' }), { callerDid: poster })).toBe(true);
    expect(repeatsStep('cancel', task({ status: 'completed' }), { callerDid: poster })).toBe(false);
    // a repeat never stands for a step that may still be taken: it only turns a refusal into the task
    for (const op of ['claim', 'deliver', 'complete', 'cancel'] as const) {
      for (const status of TASK_STATUSES) {
        for (const caller of [poster, claimer, other]) {
          const t = task({ status, claimerDid: status === 'posted' ? null : claimer, resultBody: 'r' });
          if (repeatsStep(op, t, { callerDid: caller, resultBody: 'r' })) expect(refusalOf(op, t, caller), `${op} ${status} ${caller}`).not.toBeNull();
        }
      }
    }
  });
});

describe('money in integer tinybars', () => {
  it('HBAR with up to 8 decimals converts exactly, anything else is refused', () => {
    expect(hbarToTinybars(1)).toBe(100_000_000n);
    expect(hbarToTinybars(0.00000001)).toBe(1n);
    expect(hbarToTinybars(3.5)).toBe(350_000_000n);
    expect(hbarToTinybars(0.1 + 0.2)).toBeNull(); // 0.30000000000000004
    for (const bad of [0, -1, Number.NaN, Infinity, 1e7, 1.123456789]) expect(hbarToTinybars(bad)).toBeNull();
  });

  it('price = claimer share + fee, fee = floor(price * bps / 10000), for any price and bps', () => {
    fc.assert(
      fc.property(fc.bigInt({ min: 1n, max: 100_000_000_000_000n }), fc.integer({ min: 0, max: 10_000 }), (price, bps) => {
        const { claimerTinybars, feeTinybars } = payoutOf(price, bps);
        expect(claimerTinybars + feeTinybars).toBe(price);
        expect(feeTinybars).toBe(marketFee(price, bps));
        expect(feeTinybars * 10_000n <= price * BigInt(bps)).toBe(true);
        expect((feeTinybars + 1n) * 10_000n > price * BigInt(bps)).toBe(true);
      }),
    );
  });

  it('tinybars back to HBAR round-trips', () => {
    fc.assert(fc.property(fc.integer({ min: 1, max: 100_000_000_000_000 }), (t) => {
        expect(hbarToTinybars(tinybarsToHbar(BigInt(t)))).toBe(BigInt(t));
      }),
    );
  });
});

describe('limits and ids', () => {
  it('resultBody is bounded in UTF-8 bytes (4096)', () => {
    expect(isResultBodyTooLarge('x'.repeat(4096))).toBe(false);
    expect(isResultBodyTooLarge('x'.repeat(4097))).toBe(true);
    expect(isResultBodyTooLarge('é'.repeat(2048))).toBe(false);
    expect(isResultBodyTooLarge('é'.repeat(2049))).toBe(true);
  });

  it('resultIpfs is an IPFS reference', () => {
    expect(isResultIpfs('ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi')).toBe(true);
    expect(isResultIpfs('QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG')).toBe(true);
    expect(isResultIpfs('ipfs://bafybeigdyrzt5sfp7udm7hu76uh7y26nf3efuylqabf3oclgtqy55fbzdi/a/b.json')).toBe(true);
    for (const bad of ['', 'https://example.com/x', 'ipfs://', 'ipfs://hello world', 'Qm123']) expect(isResultIpfs(bad)).toBe(false);
  });

  it('task ids are UUIDv7, ordered by creation', () => {
    const ids = Array.from({ length: 50 }, () => uuidv7());
    expect(ids.every(isTaskId)).toBe(true);
    expect([...ids].sort()).toEqual(ids);
    expect(isTaskId('6f1c1f7e-2b2a-4c8e-9a8b-0d4c8f2f7b11')).toBe(false); // v4
  });

  it('topic messages parse only when versioned and typed', () => {
    expect(parseTaskMessage(JSON.stringify({ v: 1, type: 'task.posted', taskId: 'x', seq: 1 }))?.type).toBe('task.posted');
    expect(parseTaskMessage(JSON.stringify({ v: 2, type: 'task.posted', taskId: 'x' }))).toBeNull();
    expect(parseTaskMessage(JSON.stringify({ v: 1, type: 'task.other', taskId: 'x' }))).toBeNull();
    expect(parseTaskMessage('nope')).toBeNull();
  });
});
