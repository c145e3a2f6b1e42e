// Localnet mirror: /topics/{id}/messages pages are answered by index (sequence numbers are dense from 1),
// agree with a plain filter over the whole topic for every filter/order/limit, and read only about one
// page of messages, not the topic.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createMirror } from '../../localnet/mirror-rest.js';
import { LedgerState, type Topic, type TopicMessage } from '../../localnet/state.js';
import { nsToMirror } from '../../localnet/ids.js';
import type { Engine } from '../../localnet/engine.js';

const TOPIC = 1001;
const BASE_NS = 1_700_000_000_000_000_000n;

function topicWith(n: number): { state: LedgerState; reads: { n: number } } {
  const state = new LedgerState();
  const msgs: TopicMessage[] = [];
  for (let i = 1; i <= n; i++)
    msgs.push({ topic: TOPIC, seq: BigInt(i), consensusNs: BASE_NS + BigInt(i) * 1000n, message: Buffer.from(`m${i}`), runningHash: new Uint8Array(48), payer: 2, chunk: null });
  const reads = { n: 0 };
  // Count element reads so the test can tell a page from a scan of the topic.
  const counted = new Proxy(msgs, {
    get(target, key, recv) {
      if (typeof key === 'string' && /^\d+$/.test(key)) reads.n++;
      return Reflect.get(target, key, recv);
    },
  });
  const topic: Topic = {
    num: TOPIC, memo: '', adminKey: null, submitKey: null, autoRenewAccount: null, seq: BigInt(n), runningHash: new Uint8Array(48),
    createdNs: BASE_NS, expiryNs: BASE_NS, deleted: false, messages: counted,
  };
  state.topics.set(TOPIC, topic);
  return { state, reads };
}

async function get(state: LedgerState, url: string): Promise<{ status: number; body: any }> {
  const handle = createMirror({ state } as unknown as Engine);
  let status = 0;
  let text = '';
  const res = { writeHead: (s: number) => void (status = s), end: (b: string) => void (text = b) } as unknown as ServerResponse;
  await handle({ url, method: 'GET' } as IncomingMessage, res);
  return { status, body: JSON.parse(text) };
}

const path = `/api/v1/topics/0.0.${TOPIC}/messages`;
const seqs = (b: { messages: { sequence_number: number }[] }) => b.messages.map((m) => m.sequence_number);
const tsOf = (seq: number) => nsToMirror(BASE_NS + BigInt(seq) * 1000n);

type Op = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
const test = (op: Op, a: number, b: number) =>
  op === 'eq' ? a === b : op === 'ne' ? a !== b : op === 'gt' ? a > b : op === 'gte' ? a >= b : op === 'lt' ? a < b : a <= b;

describe('localnet mirror topic message pages', () => {
  it('agree with a plain filter of the whole topic for any sequence/timestamp filters, order and limit (property)', async () => {
    const N = 60;
    const { state } = topicWith(N);
    const arbOp = fc.constantFrom<Op>('eq', 'ne', 'gt', 'gte', 'lt', 'lte');
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ op: arbOp, v: fc.integer({ min: 0, max: N + 2 }), ts: fc.boolean() }), { maxLength: 3 }),
        fc.constantFrom<'asc' | 'desc' | undefined>('asc', 'desc', undefined),
        fc.integer({ min: 1, max: 30 }),
        async (fs, order, limit) => {
          const q = new URLSearchParams();
          for (const f of fs) q.append(f.ts ? 'timestamp' : 'sequencenumber', `${f.op}:${f.ts ? tsOf(f.v) : f.v}`);
          if (order) q.set('order', order);
          q.set('limit', String(limit));
          const all = Array.from({ length: N }, (_, i) => i + 1).filter((s) => fs.every((f) => test(f.op, s, f.v)));
          if (order === 'desc') all.reverse();
          const { status, body } = await get(state, `${path}?${q}`);
          expect(status).toBe(200);
          expect(seqs(body)).toEqual(all.slice(0, limit));
          expect(body.links.next === null).toBe(all.length <= limit);
          if (body.links.next) {
            // The next link continues exactly where the page stopped.
            const next = await get(state, body.links.next);
            expect(seqs(next.body)).toEqual(all.slice(limit, 2 * limit));
          }
        },
      ),
      { numRuns: 300 },
    );
  });

  it('a page reads about one page of messages, not the topic', async () => {
    const N = 20_000;
    const { state, reads } = topicWith(N);
    const cases: [string, number[]][] = [
      ['limit=100', [1, 100]],
      ['sequencenumber=gt:15000&limit=100', [15001, 15100]],
      ['sequencenumber=gte:15000&limit=100', [15000, 15099]],
      ['sequencenumber=lt:500&order=desc&limit=100', [499, 400]],
      ['order=desc&limit=100', [N, N - 99]],
      [`timestamp=gte:${tsOf(12345)}&limit=100`, [12345, 12444]],
    ];
    for (const [query, [first, last]] of cases) {
      reads.n = 0;
      const { body } = await get(state, `${path}?${query}`);
      const s = seqs(body);
      expect([s[0], s[s.length - 1], s.length]).toEqual([first, last, 100]);
      expect(body.links.next).not.toBeNull();
      expect(reads.n, query).toBeLessThan(400); // a whole-topic filter reads 20,000
    }
    reads.n = 0;
    expect((await get(state, `${path}/12345`)).body.sequence_number).toBe(12345);
    expect(reads.n).toBeLessThan(5);
    expect((await get(state, `${path}/${N + 1}`)).status).toBe(404);
    expect((await get(state, `${path}/0`)).status).toBe(404);
  });
});
