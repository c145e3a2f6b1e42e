// GET /api/search (SPEC 2 "Search result", 4.7) against real PostgreSQL and a localnet (so the
// directory and marketplace route groups exist): agents and tasks written to their projections reach
// the memory caches through NOTIFY and are found by a case-insensitive substring of a name, DID,
// skill, capability, task title or description; SPEC result shapes; 1-200 characters else 400;
// limit shared between the kinds; a change of a task is searchable under its new title only.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { seedAgent, seedTask } from '../support/seedDirectory.js';
import type { TaskRecord } from '../../domain/market.js';

interface SearchBody {
  query: string;
  count: number;
  results: Array<Record<string, unknown>>;
}

async function eventually<T>(fn: () => Promise<T>, check: (v: T) => boolean, timeoutMs = 10_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (check(v)) return v;
    if (Date.now() > end) throw new Error(`condition not reached: ${JSON.stringify(v).slice(0, 400)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('GET /api/search (memory: directory + task book)', () => {
  let sql: Sql;
  let stack: LedgerStack;
  let app: FastifyInstance;
  // a token no other test writes, so every assertion is about this file's rows
  const tok = `zq${randomBytes(4).toString('hex')}`;
  let weatherDid: string;
  let oracleDid: string;
  let translate: TaskRecord;

  const search = async (query: string) => {
    const res = await app.inject({ method: 'GET', url: `/api/search?${query}` });
    return { status: res.statusCode, body: res.json() as SearchBody & { code?: string } };
  };

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 6 });
    stack = await startLedgerStack('search');
    app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '100000' }, { sql, ledger: stack.ledger });
    const seqBase = 1_000_000_000 + (process.pid % 1000) * 1000;
    weatherDid = await seedAgent(sql, { name: `Weather-${tok}-Bot`, skills: ['Forecasting', `hail-${tok}`], capabilities: ['api_call', 'data_provide'], sequence: seqBase + 1 });
    oracleDid = await seedAgent(sql, { name: `oracle-${tok}`, capabilities: ['orchestration', 'payment'], tier: 'platinum', sequence: seqBase + 2 });
    translate = await seedTask(sql, { title: `Translate ${tok} manual`, description: 'From German to English, 40 pages', priceHbar: 42.5, capabilities: ['data_provide'] });
    await seedTask(sql, { title: 'Summarise a report', description: `Needs the ${tok.toUpperCase()} glossary; 100% literal`, capabilities: ['api_call'] });
    // both caches hold the rows (NOTIFY reached them)
    await eventually(() => search(`q=${tok}`), (r) => r.status === 200 && r.body.count === 4);
  });
  afterAll(async () => {
    await app?.close();
    await stack?.stop();
    await sql?.end();
  });

  it('answers the SPEC shape: agents (newest registration first) then tasks (newest first)', async () => {
    const r = await search(`q=${tok}`);
    expect(r.status).toBe(200);
    expect(Object.keys(r.body).sort()).toEqual(['count', 'query', 'results']);
    expect(r.body.query).toBe(tok);
    expect(r.body.count).toBe(r.body.results.length);
    expect(r.body.results.map((x) => x.type)).toEqual(['agent', 'agent', 'task', 'task']);
    const [oracle, weather, summary, task] = r.body.results;
    expect(oracle).toEqual({
      type: 'agent',
      did: oracleDid,
      name: `oracle-${tok}`,
      tier: 'platinum',
      capabilities: ['orchestration', 'payment'],
      active: true,
      _links: { self: { href: `/agents/${encodeURIComponent(oracleDid)}` } },
    });
    expect(weather).toMatchObject({ type: 'agent', did: weatherDid, skills: ['Forecasting', `hail-${tok}`], tier: 'gold', active: true });
    expect(summary).toMatchObject({ type: 'task', title: 'Summarise a report' });
    expect(task).toEqual({
      type: 'task',
      taskId: translate.taskId,
      title: `Translate ${tok} manual`,
      priceHbar: 42.5,
      capabilities: ['data_provide'],
      status: 'posted',
      _links: { self: { href: `/market/tasks/${translate.taskId}` } },
    });
  });

  it('matches case-insensitively over names, DIDs, skills, capabilities, titles and descriptions', async () => {
    // name, any case
    expect((await search(`q=WEATHER-${tok.toUpperCase()}`)).body.results.map((x) => x.did)).toEqual([weatherDid]);
    // DID substring
    const didPart = weatherDid.slice('did:hedera:local:'.length);
    const byDid = await search(`q=${encodeURIComponent(didPart)}&type=agent`);
    expect(byDid.body.results.map((x) => x.did)).toContain(weatherDid);
    // skill
    expect((await search(`q=HAIL-${tok}`)).body.results.map((x) => x.did)).toEqual([weatherDid]);
    // capability: the newest agent with orchestration is ours
    const byCap = await search('q=orchestr&type=agent&limit=100');
    expect(byCap.body.results[0]).toMatchObject({ did: oracleDid });
    for (const a of byCap.body.results) expect((a.capabilities as string[]).some((c) => c.includes('orchestr'))).toBe(true);
    // task title and description (query upper case, description holds the token in upper case)
    expect((await search(`q=translate%20${tok}`)).body.results.map((x) => x.taskId)).toEqual([translate.taskId]);
    const byDescription = await search(`q=${tok}%20glossary&type=task`);
    expect(byDescription.body.results.map((x) => x.title)).toEqual(['Summarise a report']);
    // no match
    expect((await search(`q=${tok}-nothing-matches`)).body).toEqual({ query: `${tok}-nothing-matches`, results: [], count: 0 });
  });

  it('matches the query literally (no wildcards, no regular expressions) and never across two fields', async () => {
    expect((await search(`q=${encodeURIComponent(`${tok} glossary; 100%`)}`)).body.count).toBe(1);
    expect((await search(`q=${encodeURIComponent(`${tok}.glossary`)}`)).body.count).toBe(0);
    expect((await search(`q=${encodeURIComponent(`${tok}%`)}`)).body.count).toBe(0);
    // name "oracle-<tok>" followed by its DID: the two fields do not join
    expect((await search(`q=${encodeURIComponent(`${tok}did:hedera`)}`)).body.count).toBe(0);
    // a NUL is not text: refused before any store sees it (issue 26 item 7), never a 500
    const withNul = await search(`q=${encodeURIComponent(`bot${'\u0000'}`)}`);
    expect(withNul.status).toBe(400);
    expect(withNul.body.code).toBe('invalid_request');
  });

  it('trims the query and refuses an empty or over-long one with 400 invalid_request', async () => {
    for (const q of ['', 'q=', 'q=%20%20', `q=${'a'.repeat(201)}`, `q=${tok}&limit=0`, `q=${tok}&limit=101`, `q=${tok}&type=user`]) {
      const r = await search(q);
      expect(r.status, q).toBe(400);
      expect(r.body.code, q).toBe('invalid_request');
    }
    const long = await search(`q=${'a'.repeat(199)}b`);
    expect(long.status).toBe(200);
    expect(long.body.query).toHaveLength(200);
    expect((await search(`q=%20${tok}%20`)).body).toMatchObject({ query: tok, count: 4 });
  });

  it('shares the limit between agents and tasks; type selects one kind', async () => {
    expect((await search(`q=${tok}&limit=2`)).body.results.map((x) => x.type)).toEqual(['agent', 'task']);
    expect((await search(`q=${tok}&limit=3`)).body.results.map((x) => x.type)).toEqual(['agent', 'agent', 'task']);
    expect((await search(`q=${tok}&limit=1`)).body.results.map((x) => x.type)).toEqual(['agent']);
    expect((await search(`q=${tok}&type=task`)).body.results.map((x) => x.type)).toEqual(['task', 'task']);
    expect((await search(`q=${tok}&type=agent&limit=1`)).body.results.map((x) => x.did)).toEqual([oracleDid]);
    // a kind with fewer matches leaves its share to the other
    expect((await search(`q=translate%20${tok}&limit=2`)).body.count).toBe(1);
  });

  it('follows changes: a retitled task is found by its new title only, a new agent appears', async () => {
    await seedTask(sql, { ...translate, title: `Proofread ${tok} leaflet`, seq: 2 });
    await eventually(() => search(`q=proofread%20${tok}`), (r) => r.body.count === 1);
    expect((await search(`q=translate%20${tok}`)).body.count).toBe(0);
    const did = await seedAgent(sql, { name: `late-${tok}`, sequence: 2_000_000_000 + (process.pid % 1000), capabilities: ['data_consume'] });
    const r = await eventually(() => search(`q=late-${tok}`), (x) => x.body.count === 1);
    expect(r.body.results[0]).toMatchObject({ type: 'agent', did, capabilities: ['data_consume'] });
  });
});
