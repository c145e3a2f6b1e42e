// The escrow audit's arithmetic (ledger/escrowAudit.ts, `npm run audit:escrow`, issue 19 item 3):
// the balance must equal what the tasks still hold, every movement must belong to a task, a task
// never pays out more than it escrowed, a settled task holds nothing, and the escrow pays no fee.
import { describe, expect, it } from 'vitest';
import { auditEscrowFigures, formatEscrowAudit } from '../../ledger/escrowAudit.js';
import type { MirrorTransaction } from '../../ledger/mirror.js';
import type { TaskMessage } from '../../domain/market.js';

const ESCROW = '0.0.1002';
let n = 0;
function tx(memo: string, escrowAmount: number, opts: { payer?: string; scheduled?: boolean } = {}): MirrorTransaction {
  n++;
  return {
    consensus_timestamp: `1700000000.${String(n).padStart(9, '0')}`,
    name: 'CRYPTOTRANSFER',
    result: 'SUCCESS',
    transaction_id: `${opts.payer ?? '0.0.2'}-1700000000-${n}`,
    scheduled: opts.scheduled ?? false,
    memo_base64: Buffer.from(memo).toString('base64'),
    transfers: [
      { account: ESCROW, amount: escrowAmount },
      { account: '0.0.2000', amount: -escrowAmount },
    ],
  };
}
const msg = (taskId: string, seq: number, status: TaskMessage['status'], escrowStatus: TaskMessage['escrowStatus']): TaskMessage => ({ v: 1, type: 'task.posted', taskId, seq, status, escrowStatus, at: '2025-01-01T00:00:00Z' });

describe('auditEscrowFigures', () => {
  it('holds when the balance is what the open tasks hold (fund, top-up, payout, refund)', () => {
    const r = auditEscrowFigures({
      escrowAccountId: ESCROW,
      balanceTinybars: 300n,
      transactions: [tx('task a fund', 500, { scheduled: true }), tx('task a topup', 100, { scheduled: true }), tx('task a payout', -600), tx('task b fund', 300, { scheduled: true }), tx('task c fund', 40, { scheduled: true }), tx('task c refund', -40)],
      messages: [msg('a', 5, 'completed', 'released'), msg('b', 2, 'claimed', 'funded'), msg('c', 3, 'cancelled', 'refunded')],
    });
    expect(r.violations).toEqual([]);
    expect(r).toMatchObject({ ok: true, heldTinybars: 300n, depositsTinybars: 940n, payoutsTinybars: 600n, refundsTinybars: 40n, differenceTinybars: 0n, openEscrows: 1, tasks: 3 });
    expect(formatEscrowAudit(r)).toMatch(/equals the funded, unpaid escrows/);
  });

  it('reports money without a task, a task paid more than it escrowed or settled with money left, two payouts, a fee paid by the escrow, a balance off by a tinybar', () => {
    const r = auditEscrowFigures({
      escrowAccountId: ESCROW,
      balanceTinybars: 1_000_000n,
      transactions: [
        tx('', 999_000, { payer: '0.0.2' }), // float mixed into the escrow
        tx('task a fund', 500, { scheduled: true }),
        tx('task a payout', -700), // the raised price paid from the pool
        tx('task b fund', 300, { scheduled: true }), // cancelled, never refunded
        tx('task d fund', 10, { scheduled: true }),
        tx('task d payout', -5),
        tx('task d payout', -5),
        tx('task e fund', 1, { scheduled: true }),
        tx('task e refund', 0, { payer: ESCROW }),
      ],
      messages: [msg('a', 5, 'completed', 'released'), msg('b', 3, 'cancelled', 'cancelled'), msg('d', 4, 'completed', 'released'), msg('e', 1, 'posted', 'funded')],
    });
    expect(r.ok).toBe(false);
    const text = r.violations.join('\n');
    expect(text).toMatch(/without a task memo/);
    expect(text).toMatch(/task a: paid out 700 tinybars of 500 escrowed/);
    expect(text).toMatch(/task b is cancelled .* still holds 300 tinybars/);
    expect(text).toMatch(/task d: 2 payouts/);
    expect(text).toMatch(/the escrow paid a transaction fee/);
    expect(text).toMatch(/escrow balance 1000000 tinybars != 101 tinybars held/);
  });
});
