/** Events out (issue 28): event ids grow whatever the clock does; a task's step names exactly one event for exactly its parties. */
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { EVENT_ID, eventReaches, nextEventIds, taskEvent, webhookSecretOf, type TaskEventView } from '../../domain/events.js';

const rnd = () => randomBytes(10);

describe('nextEventIds', () => {
  it('makes UUIDv7 ids, strictly increasing, also when the clock stands still or goes back', () => {
    const first = nextEventIds(null, 50, 1_700_000_000_000, rnd);
    const same = nextEventIds(first.at(-1)!, 50, 1_700_000_000_000, rnd);
    const back = nextEventIds(same.at(-1)!, 50, 1_600_000_000_000, rnd);
    const all = [...first, ...same, ...back];
    for (const id of all) expect(id).toMatch(EVENT_ID);
    for (let i = 1; i < all.length; i++) expect(all[i]! > all[i - 1]!).toBe(true);
  });

  it('carries into the next millisecond when the counter is full', () => {
    const full = nextEventIds(null, 1, 1_700_000_000_000, () => new Uint8Array(10).fill(0xff))[0]!;
    const [next] = nextEventIds(full, 1, 1_700_000_000_000, () => new Uint8Array(10).fill(0xff));
    expect(next! > full).toBe(true);
    expect(next).toMatch(EVENT_ID);
    expect(next!.slice(0, 13)).not.toBe(full.slice(0, 13));
  });
});

const task = (over: Partial<TaskEventView> = {}): TaskEventView => ({
  taskId: '01900000-0000-7000-8000-000000000001',
  title: 't',
  status: 'posted',
  escrowStatus: 'none',
  priceHbar: 1,
  capabilities: ['translate'],
  posterDid: 'did:hedera:local:0.0.1001',
  claimerDid: null,
  resultSha256: null,
  resultIpfs: null,
  paymentTxId: null,
  refundTxId: null,
  ...over,
});

describe('taskEvent', () => {
  it('names posting, claim, delivery, completion for the parties; a posting also for capability filters', () => {
    const posted = taskEvent(null, task(), 1, { type: 'task.posted' })!;
    expect(posted).toMatchObject({ type: 'task.posted', audience: ['did:hedera:local:0.0.1001'], capabilities: ['translate'], key: `task:${task().taskId}:1` });
    const claimed = taskEvent(task(), task({ status: 'claimed', claimerDid: 'did:hedera:local:0.0.2002' }), 2, null)!;
    expect(claimed.type).toBe('task.claimed');
    expect(claimed.audience).toEqual(['did:hedera:local:0.0.1001', 'did:hedera:local:0.0.2002']);
    expect(claimed.capabilities).toBeUndefined();
    const delivered = taskEvent(
      task({ status: 'claimed', claimerDid: 'did:hedera:local:0.0.2002' }),
      task({ status: 'delivered', claimerDid: 'did:hedera:local:0.0.2002', resultSha256: 'ab' }),
      3,
      { type: 'task.delivered' },
    )!;
    expect(delivered.data).toMatchObject({ resultSha256: 'ab' });
    expect(JSON.stringify(delivered.data)).not.toContain('resultBody');
  });

  it('a lapsed claim is task.released for the former claimer too; a deadline is task.expired', () => {
    const claimed = task({ status: 'claimed', claimerDid: 'did:hedera:local:0.0.2002' });
    const released = taskEvent(claimed, task(), 4, { type: 'task.expired', reason: 'claim window' })!;
    expect(released).toMatchObject({ type: 'task.released', capabilities: ['translate'] });
    expect(released.audience).toContain('did:hedera:local:0.0.2002');
    expect(taskEvent(task(), task({ status: 'cancelled' }), 5, { type: 'task.expired', reason: 'deadline' })!.type).toBe('task.expired');
    expect(taskEvent(task(), task({ status: 'cancelled' }), 5, null)!.type).toBe('task.cancelled');
  });

  it('a step that changes nothing an agent acts on names no event', () => {
    expect(taskEvent(task(), task({ escrowStatus: 'funded' }), 2, null)).toBeNull();
  });
});

describe('eventReaches', () => {
  const sub = { ownerDid: 'did:a', events: ['task.posted', 'task.claimed'], capabilities: ['translate'] };
  it('reaches the owner, and a broadcast only through the capability filter', () => {
    expect(eventReaches(sub, { type: 'task.claimed', audience: ['did:a'], capabilities: [] })).toBe(true);
    expect(eventReaches(sub, { type: 'task.claimed', audience: ['did:b'], capabilities: ['translate'] })).toBe(false);
    expect(eventReaches(sub, { type: 'task.posted', audience: ['did:b'], capabilities: ['translate', 'x'] })).toBe(true);
    expect(eventReaches(sub, { type: 'task.posted', audience: ['did:b'], capabilities: ['summarise'] })).toBe(false);
  });
});

it('webhook secrets are whsec_ and base64 of the bytes', () => {
  expect(webhookSecretOf(new Uint8Array([1, 2, 3]))).toBe(`whsec_${Buffer.from([1, 2, 3]).toString('base64')}`);
});
