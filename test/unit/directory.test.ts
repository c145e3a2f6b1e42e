// Directory rules and the in-memory index (domain/directory.ts): filtered pages agree with a plain
// filter over the same entries (the online filter of issue 29 item 6 among them), replays keep first registrations, messages parse strictly.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CAPABILITIES, type Capability } from '../../domain/capabilities.js';
import { completeMessages } from '../../activities/ledger/directory.js';
import {
  cardDid,
  capabilitiesOutsidePassport,
  DirectoryIndex,
  normaliseSkills,
  parseDirectoryMessage,
  replayDirectory,
  type AgentEntry,
  type AgentRegisteredMessage,
} from '../../domain/directory.js';

function entry(i: number, caps: Capability[], skills: string[], name = `agent-${i}`): AgentEntry {
  return {
    did: `did:hedera:local:0.0.${1000 + i}`,
    tokenId: '0.0.900',
    serial: i + 1,
    accountId: `0.0.${1000 + i}`,
    name,
    capabilities: caps,
    endpoint: `https://a${i}.example.com`,
    tier: 'gold',
    timestamp: 1_700_000_000_000 + i,
    active: true,
    ...(skills.length ? { skills } : {}),
  };
}

const SKILLS = ['Weather', 'search', 'translate', 'SQL'];

describe('DirectoryIndex', () => {
  it('answers every filter combination and page like a plain filter (property)', () => {
    const arbEntry = fc.record({
      caps: fc.subarray([...CAPABILITIES]),
      skills: fc.subarray(SKILLS),
      name: fc.constantFrom('alpha', 'Beta bot', 'gamma', 'ALPHA-two', 'delta'),
      seq: fc.integer({ min: 1, max: 1000 }),
      online: fc.constantFrom(true, false, null),
    });
    fc.assert(
      fc.property(
        fc.array(arbEntry, { maxLength: 40 }),
        fc.record({
          capability: fc.option(fc.constantFrom(...CAPABILITIES), { nil: undefined }),
          skill: fc.option(fc.constantFrom('weather', 'SEARCH', 'sql', 'none'), { nil: undefined }),
          name: fc.option(fc.constantFrom('alp', 'BOT', 'a', 'zzz'), { nil: undefined }),
          limit: fc.integer({ min: 1, max: 10 }),
          offset: fc.integer({ min: 0, max: 45 }),
          online: fc.option(fc.boolean(), { nil: undefined }),
        }),
        fc.boolean(),
        (items, q, incremental) => {
          const all = items.map((x, i) => ({ entry: { ...entry(i, x.caps, x.skills, `${x.name}-${i}`), online: x.online }, sequence: x.seq }));
          const index = new DirectoryIndex();
          if (incremental) for (const a of [...all].reverse()) index.upsert(a.entry, a.sequence);
          else index.replaceAll(all);
          const expected = [...all]
            .sort((a, b) => a.sequence - b.sequence || (a.entry.did < b.entry.did ? -1 : 1))
            .map((a) => a.entry)
            .filter((e) => !q.capability || e.capabilities.includes(q.capability))
            .filter((e) => !q.skill || (e.skills ?? []).some((s) => s.toLowerCase() === q.skill!.toLowerCase()))
            .filter((e) => !q.name || e.name.toLowerCase().includes(q.name.toLowerCase()))
            // online=false: offline or not probed yet (null)
            .filter((e) => q.online === undefined || (e.online === true) === q.online);
          const got = index.query(q);
          expect(got.total).toBe(expected.length);
          expect(got.agents.map((a) => a.did)).toEqual(expected.slice(q.offset, q.offset + q.limit).map((a) => a.did));
        },
      ),
      { numRuns: 300 },
    );
  });

  it("replaces and removes entries (a revoked passport's entry stays, inactive)", () => {
    const index = new DirectoryIndex();
    index.upsert(entry(1, ['api_call'], ['search']), 1);
    index.upsert(entry(2, ['payment'], []), 2);
    index.upsert({ ...entry(1, ['api_call'], ['search']), active: false }, 1);
    expect(index.size).toBe(2);
    expect(index.get('did:hedera:local:0.0.1001')!.active).toBe(false);
    expect(index.query({ skill: 'search', limit: 10, offset: 0 }).total).toBe(1);
    index.remove('did:hedera:local:0.0.1001');
    expect(index.query({ skill: 'search', limit: 10, offset: 0 })).toEqual({ agents: [], total: 0 });
    expect(index.query({ limit: 10, offset: 0 }).agents.map((a) => a.serial)).toEqual([3]);
  });
});

const message = (did: string, name: string, extra: Partial<AgentRegisteredMessage> = {}): AgentRegisteredMessage => ({
  v: 1,
  type: 'agent.registered',
  did,
  accountId: did.split(':')[3]!,
  tokenId: '0.0.900',
  serial: 1,
  name,
  capabilities: ['api_call'],
  endpoint: 'https://x.example.com',
  tier: 'bronze',
  timestamp: 1,
  ...extra,
});

describe('directory messages and replay', () => {
  it('parses v1 agent.registered messages and nothing else', () => {
    const m = message('did:hedera:local:0.0.1001', 'a', { skills: ['s'] });
    expect(parseDirectoryMessage(JSON.stringify(m))).toEqual(m);
    expect(parseDirectoryMessage('not json')).toBeNull();
    expect(parseDirectoryMessage(JSON.stringify({ ...m, v: 2 }))).toBeNull();
    expect(parseDirectoryMessage(JSON.stringify({ ...m, type: 'passport.issued' }))).toBeNull();
    expect(parseDirectoryMessage(JSON.stringify({ ...m, capabilities: ['fly'] }))).toBeNull();
    expect(parseDirectoryMessage(JSON.stringify({ ...m, tier: 'diamond' }))).toBeNull();
    expect(parseDirectoryMessage(JSON.stringify({ ...m, name: 'x'.repeat(65) }))).toBeNull();
    expect(parseDirectoryMessage(JSON.stringify({ ...m, serial: 0 }))).toBeNull();
  });

  it('keeps the first registration of a DID and of a name (case-insensitive)', () => {
    const r = replayDirectory([
      { sequence: 3, message: message('did:hedera:local:0.0.3', 'Alpha') },
      { sequence: 1, message: message('did:hedera:local:0.0.1', 'alpha') },
      { sequence: 2, message: message('did:hedera:local:0.0.1', 'beta') },
      { sequence: 4, message: message('did:hedera:local:0.0.4', 'gamma') },
    ]);
    expect(r.entries.map((e) => [e.sequence, e.message.name])).toEqual([
      [1, 'alpha'],
      [4, 'gamma'],
    ]);
    expect(r.skipped).toBe(2);
  });

  it('reads the DID of an agent card from did or a DID-valued id', () => {
    expect(cardDid({ did: 'did:hedera:local:0.0.1' })).toBe('did:hedera:local:0.0.1');
    expect(cardDid({ id: 'did:web:example.com', name: 'x' })).toBe('did:web:example.com');
    expect(cardDid({ id: 'https://example.com/card', name: 'x' })).toBeNull();
    expect(cardDid([])).toBeNull();
    expect(cardDid(null)).toBeNull();
  });

  it('checks capabilities against the passport and normalises skills', () => {
    expect(capabilitiesOutsidePassport(['api_call', 'payment', 'payment'], ['api_call', 'data_consume'])).toEqual(['payment']);
    expect(normaliseSkills([' Search ', 'search', '', 'SQL'])).toEqual(['Search', 'SQL']);
  });
});

describe('completeMessages (the rebuild reads a whole topic)', () => {
  const raw = (seq: number, text: string, chunk?: { key: string; number: number; total: number }) => ({
    consensus_timestamp: `1700000000.${String(seq).padStart(9, '0')}`,
    message: Buffer.from(text).toString('base64'),
    payer_account_id: '0.0.2',
    sequence_number: seq,
    topic_id: '0.0.1006',
    chunk_info: chunk ? { initial_transaction_id: { account_id: '0.0.2', transaction_valid_start: chunk.key }, number: chunk.number, total: chunk.total } : null,
  });

  it('joins chunk groups in chunk order, skips a group that never completed without holding back later messages', () => {
    const r = completeMessages([
      raw(1, 'one'),
      raw(2, 'orphan-', { key: '1.1', number: 1, total: 2 }), // its second chunk never came
      raw(3, 'b', { key: '2.2', number: 2, total: 2 }),
      raw(4, 'three'),
      raw(5, 'a', { key: '2.2', number: 1, total: 2 }),
      raw(6, 'six'),
    ]);
    expect(r.messages).toEqual([
      { sequence: 1, text: 'one' },
      { sequence: 3, text: 'ab' },
      { sequence: 4, text: 'three' },
      { sequence: 6, text: 'six' },
    ]);
    expect(r.incomplete).toBe(1);
  });
});
