// The escrow payouts and refunds of the marketplace run one at a time per task under a PostgreSQL
// advisory lock held on a connection reserved from the worker's pool, while their own queries (the
// submitter's records, what the task holds in escrow) take connections from the same pool. More
// concurrent escrow writes than the pool has connections used to take every connection for the locks
// and leave the writes waiting for one forever (found by bench/market.ts: the payouts of 100
// concurrent completions stalled with a pool of 10, and every other query of the process with them).
// Here: a pool of 2 and 6 concurrent writes (payouts and refunds of tasks that hold nothing in escrow,
// so each is refused once it has looked): every one is answered, and the pool serves afterwards.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { ApplicationFailure } from '@temporalio/common';
import { createMarketLedgerActivities } from '../../activities/ledger/market.js';
import { createSql, type Sql } from '../../db/client.js';
import { IdempotentSubmitter } from '../../ledger/submit.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';

let stack: LedgerStack;
let sql: Sql;

beforeAll(async () => {
  stack = await startLedgerStack('escrow-pool');
  sql = createSql(inject('databaseUrl'), { max: 2 });
});
afterAll(async () => {
  await sql?.end({ timeout: 5 });
  await stack?.stop();
});

describe('escrow writes with more of them than pool connections', () => {
  it('every concurrent payout and refund is answered; the pool still serves', async () => {
    const { client, mirror } = stack.clients;
    const activities = createMarketLedgerActivities({ sql, ledger: { deployment: stack.deployment, client, mirror, submitter: new IdempotentSubmitter({ sql, client, mirror }) } });
    const [claimer, poster] = stack.localnet.config.accounts;
    const writes = Array.from({ length: 6 }, (_, i) => {
      const taskId = randomUUID();
      return i % 2
        ? activities.refundEscrow({ idempotencyKey: `task:${taskId}/refund`, taskId, posterAccountId: poster!.accountId, amountTinybars: '100000000' })
        : activities.payoutEscrow({ idempotencyKey: `task:${taskId}/payout`, taskId, claimerAccountId: claimer!.accountId, claimerTinybars: '97500000', feeTinybars: '2500000' });
    });
    const outcomes = await Promise.allSettled(writes);
    for (const o of outcomes) {
      expect(o.status).toBe('rejected');
      const err = (o as PromiseRejectedResult).reason as ApplicationFailure;
      expect(err).toBeInstanceOf(ApplicationFailure);
      expect(err.type).toBe('LedgerError.ESCROW_NOT_HELD');
      expect(err.message).toMatch(/holds 0 tinybars/);
    }
    expect(await sql`select 1 as one`).toEqual([{ one: 1 }]);
  }, 120_000);
});
