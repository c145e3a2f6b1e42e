/**
 * Ledger activities retry what the ledger adapter could not classify: a write through
 * the idempotent submitter is safe to repeat, so a gRPC INTERNAL from an overloaded node or a
 * database error around the submission record must not fail a task's step (it made deliver and
 * complete answer 502 "Activity task failed" under machine load); a status the ledger answered stays final.
 */
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { ledgerCall } from '../../activities/ledger/ledgerCall.js';
import { LedgerError } from '../../ledger/errors.js';

async function failureOf(p: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApplicationFailure);
  return err as ApplicationFailure;
}

describe('ledgerCall (every ledger activity)', () => {
  it('an unclassified failure is a retryable activity failure', async () => {
    const grpcInternal = Object.assign(new Error('13 INTERNAL: Received RST_STREAM with code 2'), { name: 'GrpcServiceError', status: { valueOf: () => 13 } });
    const database = new Error('write CONNECTION_CLOSED 127.0.0.1:5432');
    for (const err of [grpcInternal, database, new LedgerError('INTERNAL', 'unexpected')]) {
      const f = await failureOf(ledgerCall('escrow payout', () => Promise.reject(err)));
      expect(f.nonRetryable, err.message).toBe(false);
      expect(f.type).toBe('LedgerRetryable');
      expect(f.message).toContain('escrow payout: INTERNAL');
    }
  });

  it('a status the ledger answered stays final (the workflow turns it into a 400 refusal)', async () => {
    for (const err of [
      new LedgerError('INSUFFICIENT_ACCOUNT_BALANCE', 'reached consensus with INSUFFICIENT_ACCOUNT_BALANCE', { phase: 'receipt' }),
      new LedgerError('INVALID_SIGNATURE', 'precheck failed: INVALID_SIGNATURE', { phase: 'precheck' }),
    ]) {
      const f = await failureOf(ledgerCall('direct payment', () => Promise.reject(err)));
      expect(f.nonRetryable).toBe(true);
      expect(f.type).toBe(`LedgerError.${err.status}`);
    }
    const busy = await failureOf(ledgerCall('marketplace message', () => Promise.reject(new LedgerError('BUSY', 'busy'))));
    expect(busy.nonRetryable).toBe(false);
    expect(await ledgerCall('marketplace message', async () => 7)).toBe(7);
  });
});
