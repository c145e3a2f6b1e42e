// The marketplace record of an agent (domain/marketRecord.ts): the fold of the marketplace topic and
// the sum over the task projection give the same counts, and a projection write moves them by the
// difference of the task before and after.
import { describe, expect, it } from 'vitest';
import { postedTask, type TaskMessage, type TaskRecord } from '../../domain/market.js';
import { addRecords, contributions, emptyMarketRecord, factsOfTask, marketRecordView, recordDelta, recordsFromMessages, type MarketRecord } from '../../domain/marketRecord.js';
import { verifierRunDue } from '../../domain/market.js';

const P = 'did:hedera:local:0.0.1001';
const C = 'did:hedera:local:0.0.1002';
const D = 'did:hedera:local:0.0.1003';

let n = 0;
function task(over: Partial<TaskRecord> = {}): TaskRecord {
  n++;
  const t = postedTask(
    {
      taskId: `0190a6b2-3c4d-7e8f-9a0b-${String(n).padStart(12, '0')}`,
      title: 't',
      description: '',
      priceHbar: 1,
      priceTinybars: '100000000',
      capabilities: [],
      posterDid: P,
      verifierType: 'none',
      verifierConfig: null,
      deadline: null,
      feeBps: 250,
      escrow: true,
    },
    '2030-01-01T00:00:00.000Z',
  );
  return { ...t, escrowStatus: 'scheduled', scheduleId: '0.0.9', ...over };
}

/** The messages a task's workflow writes for a path of steps (as taskLifecycle.ts commits them). */
function messagesOf(t: TaskRecord, steps: { type: TaskMessage['type']; status: TaskRecord['status']; claimerDid?: string | null }[]): TaskMessage[] {
  return steps.map((s, i) => ({
    v: 1,
    type: s.type,
    taskId: t.taskId,
    seq: i + 1,
    status: s.status,
    escrowStatus: 'funded',
    at: '2030-01-01T00:00:00.000Z',
    ...(s.type === 'task.posted' || s.type === 'task.cancelled' ? { posterDid: t.posterDid } : {}),
    ...(s.claimerDid !== undefined ? { claimerDid: s.claimerDid } : {}),
  }));
}

const sum = (tasks: TaskRecord[]) => tasks.reduce((m, t) => addRecords(m, contributions(factsOfTask(t))), new Map<string, MarketRecord>());

describe('marketplace record', () => {
  // each case: the final task record and the topic messages that led to it
  const delivered = { claimerDid: C, resultBody: 'r' };
  const cases: { t: TaskRecord; msgs: TaskMessage[] }[] = [];
  const add = (t: TaskRecord, steps: Parameters<typeof messagesOf>[1]) => cases.push({ t, msgs: messagesOf(t, steps) });
  const a = task({ status: 'completed', escrowStatus: 'released', ...delivered });
  add(a, [{ type: 'task.posted', status: 'posted' }, { type: 'task.claimed', status: 'claimed', claimerDid: C }, { type: 'task.delivered', status: 'delivered', claimerDid: C }, { type: 'task.completed', status: 'completed', claimerDid: C }]);
  const b = task({ status: 'cancelled', escrowStatus: 'refunded', ...delivered });
  add(b, [{ type: 'task.posted', status: 'posted' }, { type: 'task.claimed', status: 'claimed', claimerDid: C }, { type: 'task.delivered', status: 'delivered', claimerDid: C }, { type: 'task.cancelled', status: 'cancelled' }]);
  const c = task({ status: 'cancelled', escrowStatus: 'cancelled' });
  add(c, [{ type: 'task.posted', status: 'posted' }, { type: 'task.cancelled', status: 'cancelled' }]);
  // a claim that lapsed, then another claimer delivered: only the deliverer counts
  const d = task({ status: 'delivered', claimerDid: D, resultBody: 'x' });
  add(d, [
    { type: 'task.posted', status: 'posted' },
    { type: 'task.claimed', status: 'claimed', claimerDid: C },
    { type: 'task.expired', status: 'posted', claimerDid: C },
    { type: 'task.claimed', status: 'claimed', claimerDid: D },
    { type: 'task.delivered', status: 'delivered', claimerDid: D },
  ]);
  // refused at posting (no schedule): never posted
  const e = task({ status: 'cancelled', escrowStatus: 'none', scheduleId: null });
  cases.push({ t: e, msgs: [{ v: 1, type: 'task.cancelled', taskId: e.taskId, seq: 1, status: 'cancelled', escrowStatus: 'none', at: '2030-01-01T00:00:00.000Z', posterDid: P }] });
  // released to the claimer after the review window
  const f = task({ status: 'completed', escrowStatus: 'released', ...delivered });
  add(f, [{ type: 'task.posted', status: 'posted' }, { type: 'task.claimed', status: 'claimed', claimerDid: C }, { type: 'task.delivered', status: 'delivered', claimerDid: C }, { type: 'task.verified', status: 'delivered' }, { type: 'task.completed', status: 'completed', claimerDid: C }]);

  it('the topic and the projection give the same counts', () => {
    const fromTopic = recordsFromMessages(cases.flatMap((x) => x.msgs).reverse());
    const fromProjection = sum(cases.map((x) => x.t));
    expect(Object.fromEntries(fromTopic)).toEqual(Object.fromEntries(fromProjection));
    expect(fromTopic.get(P)).toEqual({ posted: 5, completed: 2, cancelledAfterDelivery: 1, delivered: 0, paid: 0 });
    expect(fromTopic.get(C)).toEqual({ posted: 0, completed: 0, cancelledAfterDelivery: 0, delivered: 3, paid: 2 });
    expect(fromTopic.get(D)).toEqual({ posted: 0, completed: 0, cancelledAfterDelivery: 0, delivered: 1, paid: 0 });
    // a message repeated on the topic counts once
    expect(Object.fromEntries(recordsFromMessages([...cases[0]!.msgs, ...cases[0]!.msgs]))).toEqual(Object.fromEntries(sum([cases[0]!.t])));
  });

  it('a projection write moves the parties by after - before', () => {
    const posted = task();
    const claimed = { ...posted, status: 'claimed' as const, claimerDid: C };
    const done = { ...claimed, status: 'delivered' as const, resultBody: 'r' };
    const cancelled = { ...done, status: 'cancelled' as const, escrowStatus: 'refunded' as const };
    expect(Object.fromEntries(recordDelta(null, posted))).toEqual({ [P]: { ...emptyMarketRecord(), posted: 1 } });
    expect(recordDelta(posted, claimed).size).toBe(0);
    expect(Object.fromEntries(recordDelta(claimed, done))).toEqual({ [C]: { ...emptyMarketRecord(), delivered: 1 } });
    expect(Object.fromEntries(recordDelta(done, cancelled))).toEqual({ [P]: { ...emptyMarketRecord(), cancelledAfterDelivery: 1 } });
    // steps skipped by a late write still add up
    const total = addRecords(addRecords(new Map(), recordDelta(null, posted)), recordDelta(posted, cancelled));
    expect(Object.fromEntries(total)).toEqual(Object.fromEntries(sum([cancelled])));
    expect(marketRecordView(total.get(P))).toEqual({ asPoster: { posted: 1, completed: 0, cancelledAfterDelivery: 1 }, asClaimer: { delivered: 0, paid: 0 } });
  });

  it('a verdict is reused; an inconclusive outcome runs again only after the pause and under the cap', () => {
    const at = '2030-01-01T00:00:00.000Z';
    const t0 = Date.parse(at);
    expect(verifierRunDue(null, t0, 5, 1000)).toBe(true);
    expect(verifierRunDue({ passed: false, reasons: [], at, runs: 1 }, t0 + 10_000_000, 5, 1000)).toBe(false);
    expect(verifierRunDue({ passed: false, reasons: [], at, runs: 1, inconclusive: true }, t0 + 500, 5, 1000)).toBe(false);
    expect(verifierRunDue({ passed: false, reasons: [], at, runs: 1, inconclusive: true }, t0 + 1000, 5, 1000)).toBe(true);
    expect(verifierRunDue({ passed: false, reasons: [], at, runs: 5, inconclusive: true }, t0 + 1000, 5, 1000)).toBe(false);
  });
});
