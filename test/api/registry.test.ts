// Registry keys against real PostgreSQL and the Temporal dev server (SPEC 2, 3, 4.6; DESIGN.md 10):
// the key format, only the sha256 in the table, me and revoke, every 401 code, the per-IP cap and the
// sponsored budget under 20 concurrent requests, the UTC reset with an injected clock, the keyed rate
// limit (the address's window first, then the key's own), and a revoke reaching a second API instance through NOTIFY.
import { createHash } from 'node:crypto';
import { Writable } from 'node:stream';
import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { isPortOpen } from '../../scripts/lib/ports.js';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { sponsoredUsed } from '../../db/queries/registryKeys.js';
import { buildApp } from '../../api/app.js';
import { buildTestApp, testConfig } from '../support/app.js';
import { connectTestTemporal, type TestTemporal } from '../support/temporal.js';
import { eventually } from '../support/eventually.js';
import { recordSecret } from '../support/secrets.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';

interface Res {
  status: number;
  headers: Record<string, unknown>;
  body: Record<string, any>;
}

let ipCounter = 0;
/** A fresh client address per call site (every test its own per-IP budget). */
function freshIp(): string {
  ipCounter++;
  return `198.51.${Math.floor(ipCounter / 250) + (process.pid % 200)}.${(ipCounter % 250) + 1}`;
}

async function call(app: FastifyInstance, method: 'GET' | 'POST' | 'DELETE', url: string, opts: { ip?: string; key?: string; body?: unknown; headers?: Record<string, string> } = {}): Promise<Res> {
  const res = await app.inject({
    method,
    url,
    remoteAddress: opts.ip ?? '203.0.113.10',
    headers: { ...(opts.key ? { authorization: `Bearer ${opts.key}` } : {}), ...(opts.headers ?? {}) },
    ...(opts.body !== undefined ? { payload: opts.body as object } : {}),
  });
  return { status: res.statusCode, headers: res.headers, body: res.body ? res.json() : {} };
}

const register = async (app: FastifyInstance, body: Record<string, unknown>, ip = freshIp(), headers: Record<string, string> = {}) => {
  const r = await call(app, 'POST', '/api/v1/agents/register', { ip, body, headers });
  if (typeof r.body.api_key === 'string') recordSecret('registry api key', r.body.api_key); // shown once, never stored nor logged
  return r;
};


describe('registry keys (PostgreSQL, Temporal)', () => {
  let sql: Sql;
  let t: TestTemporal;
  let stack: LedgerStack;
  let clock = new Date('2031-03-14T12:00:00.000Z');
  let app: FastifyInstance;
  /** the owner of sponsored registrations, who signs them (issue 20 item 8), and another account */
  let ownerAgent: TestAgent;
  let stranger: TestAgent;
  let owner: string;
  /** A sponsored registration: owner named and the request signed by it. */
  const sponsored = async (target: FastifyInstance, name: string, ip = freshIp()) => register(target, { name, owner }, ip, await signedHeaders(target, ownerAgent));

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 8 });
    t = await connectTestTemporal('registry');
    stack = await startLedgerStack('registry');
    [ownerAgent, stranger] = stack.localnet.config.accounts;
    owner = ownerAgent.did;
    app = await buildTestApp(
      // one owner signs every sponsored registration here: its own daily cap is out of the way (tested on its own below)
      { ...stack.env, RATE_LIMIT_MAX: '100000', SPONSORED_DAILY_BUDGET: '7', SPONSORED_DAILY_PER_OWNER: '100', TEMPORAL_TASK_QUEUE: t.taskQueue },
      { sql, ledger: stack.ledger, temporal: async () => t.client, now: () => clock },
    );
  });
  afterAll(async () => {
    await app?.close();
    await t?.close();
    await stack?.stop();
    await sql?.end();
  });

  it('issues apk_ + 43 base64url characters once; the table holds only its sha256', async () => {
    const r = await register(app, { name: '  weather-bot  ' });
    expect(r.status).toBe(200);
    expect(r.headers['cache-control']).toBe('no-store');
    const key = r.body.api_key as string;
    expect(key).toMatch(/^apk_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(4), 'base64url')).toHaveLength(32);
    expect(Object.keys(r.body).sort()).toEqual(['api_key', 'created_at', 'id', 'key_prefix', 'name', 'owner', 'revoked_at', 'sponsored', 'status']);
    expect(r.body).toMatchObject({ name: 'weather-bot', owner: null, sponsored: false, status: 'active', revoked_at: null, key_prefix: key.slice(0, 12) });
    expect(r.body.created_at).toBe(clock.toISOString());

    const [row] = await sql`select * from registry_keys where id = ${r.body.id}`;
    expect(Buffer.from(row!.key_sha256).toString('hex')).toBe(createHash('sha256').update(key).digest('hex'));
    const stored = JSON.stringify(Object.values(row!).map((v) => (Buffer.isBuffer(v) ? v.toString('hex') : v)));
    expect(stored).not.toContain(key.slice(4));
    expect(stored).not.toContain(Buffer.from(key).toString('hex'));
    // the address is kept as a digest only
    expect(stored).not.toContain('198.51.');

    // GET /me answers the record, never the key again
    const me = await call(app, 'GET', '/api/v1/agents/me', { key });
    expect(me.status).toBe(200);
    const { api_key: _shownOnce, ...record } = r.body;
    expect(me.body).toEqual(record);
    expect(JSON.stringify(me.body)).not.toContain(key);
  });

  it('refuses malformed bodies: 400 invalid_request', async () => {
    expect((await register(app, {})).body.code).toBe('invalid_request');
    expect((await register(app, { name: '' })).body.code).toBe('invalid_request');
    expect((await register(app, { name: 'x'.repeat(65) })).body.code).toBe('invalid_request');
    expect((await register(app, { name: 'a\u0000b' })).body.code).toBe('invalid_request');
    expect((await register(app, { name: 'ok', extra: 1 })).body.code).toBe('invalid_request');
    expect((await register(app, { name: 'ok', owner: 'not-a-did' })).status).toBe(400);
    const otherNet = await register(app, { name: 'ok', owner: 'did:hedera:mainnet:0.0.7' });
    expect(otherNet.status).toBe(400);
    expect(otherNet.body.code).toBe('invalid_request');
  });

  it('every 401: missing, malformed, unknown, revoked; revoke is instant and final', async () => {
    const missing = await call(app, 'GET', '/api/v1/agents/me');
    expect(missing.status).toBe(401);
    expect(missing.body.code).toBe('agent_key_invalid');
    for (const bad of ['apk_short', `apk_${'A'.repeat(42)}!`, `apk_${'A'.repeat(44)}`]) {
      const r = await call(app, 'GET', '/api/v1/agents/me', { key: bad });
      expect(r.status, bad).toBe(401);
      expect(r.body.code).toBe('agent_key_invalid');
    }
    const unknown = await call(app, 'GET', '/api/v1/agents/me', { key: `apk_${'A'.repeat(43)}` });
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('agent_key_invalid');
    const notBearer = await call(app, 'GET', '/api/v1/agents/me', { headers: { authorization: `Token apk_${'A'.repeat(43)}` } });
    expect(notBearer.body.code).toBe('agent_key_invalid');

    const { body } = await register(app, { name: 'to-revoke' });
    const key = body.api_key as string;
    const del = await call(app, 'DELETE', '/api/v1/agents/me', { key });
    expect(del.status).toBe(200);
    expect(del.body).toMatchObject({ id: body.id, status: 'revoked', revoked_at: clock.toISOString() });
    const [row] = await sql`select status, revoked_at from registry_keys where id = ${body.id}`;
    expect(row!.status).toBe('revoked');
    for (const method of ['GET', 'DELETE'] as const) {
      const r = await call(app, method, '/api/v1/agents/me', { key });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('agent_key_revoked');
    }
  });

  it('the per-IP cap under 20 concurrent registrations: exactly 5 pass, the rest 429 register_rate_limited with Retry-After', async () => {
    const ip = freshIp();
    const results = await Promise.all(Array.from({ length: 20 }, (_, i) => register(app, { name: `burst-${i}` }, ip)));
    expect(results.filter((r) => r.status === 200)).toHaveLength(5);
    const refused = results.filter((r) => r.status !== 200);
    expect(refused).toHaveLength(15);
    for (const r of refused) {
      expect(r.status).toBe(429);
      expect(r.body.code).toBe('register_rate_limited');
      // all five were made at the (frozen) clock's instant: the first place frees 24 h later
      expect(r.headers['retry-after']).toBe(String(24 * 3600));
    }
    const [{ count }] = await sql`select count(*)::int as count from registry_keys where ip_sha256 = ${createHash('sha256').update(ip).digest()}`;
    expect(count).toBe(5);
  });

  it('the per-IP window is rolling: a place frees 24 h after the oldest registration', async () => {
    const ip = freshIp();
    const start = clock;
    try {
      for (let i = 0; i < 5; i++) {
        clock = new Date(start.getTime() + i * 3600_000); // one per hour
        expect((await register(app, { name: `roll-${i}` }, ip)).status).toBe(200);
      }
      clock = new Date(start.getTime() + 23 * 3600_000);
      const refused = await register(app, { name: 'roll-6' }, ip);
      expect(refused.status).toBe(429);
      expect(refused.headers['retry-after']).toBe(String(3600)); // the first one leaves the window at start + 24 h
      clock = new Date(start.getTime() + 24 * 3600_000 + 1000);
      expect((await register(app, { name: 'roll-7' }, ip)).status).toBe(200);
      expect((await register(app, { name: 'roll-8' }, ip)).status).toBe(429); // the second one is still inside
    } finally {
      clock = start;
    }
  });

  it('the sponsored budget under 20 concurrent registrations from 20 addresses: never one over; resets at UTC midnight', async () => {
    const start = clock;
    try {
      clock = new Date('2031-05-01T23:59:58.500Z');
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => sponsored(app, `sponsored-${i}`)));
      const ok = results.filter((r) => r.status === 200);
      expect(ok).toHaveLength(7);
      for (const r of ok) {
        expect(r.body).toMatchObject({ owner, sponsored: true, status: 'active', directory_record: { status: 'pending', sequence_number: null, transaction_id: null } });
      }
      const refused = results.filter((r) => r.status !== 200);
      expect(refused).toHaveLength(13);
      for (const r of refused) {
        expect(r.status).toBe(429);
        expect(r.body.code).toBe('sponsored_quota_exceeded');
        expect(r.headers['retry-after']).toBe('2'); // 1.5 s to midnight, rounded up
      }
      expect(await sponsoredUsed(sql, '2031-05-01')).toBe(7);
      // a plain registration is outside the sponsored budget
      expect((await register(app, { name: 'plain' })).status).toBe(200);
      // each sponsored registration started its workflow (public fields only)
      const handle = t.client.workflow.getHandle(`registry-sponsored:${ok[0]!.body.id}`);
      const described = await handle.describe();
      expect(described.taskQueue).toBe(t.taskQueue);

      // UTC midnight: a fresh budget
      clock = new Date('2031-05-02T00:00:00.500Z');
      const next = await Promise.all(Array.from({ length: 9 }, (_, i) => sponsored(app, `next-${i}`)));
      expect(next.filter((r) => r.status === 200)).toHaveLength(7);
      expect(await sponsoredUsed(sql, '2031-05-02')).toBe(7);
      expect(await sponsoredUsed(sql, '2031-05-01')).toBe(7);
    } finally {
      clock = start;
    }
  });

  it('one owner takes at most SPONSORED_DAILY_PER_OWNER of the day under 20 concurrent registrations; the rest of the pool stays for other owners (issue 26 item 8)', async () => {
    const capped = await buildTestApp(
      { ...stack.env, RATE_LIMIT_MAX: '100000', SPONSORED_DAILY_BUDGET: '7', SPONSORED_DAILY_PER_OWNER: '2', TEMPORAL_TASK_QUEUE: t.taskQueue },
      { sql, ledger: stack.ledger, temporal: async () => t.client, now: () => clock },
    );
    const start = clock;
    try {
      clock = new Date('2031-08-01T23:59:58.500Z');
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => sponsored(capped, `one-owner-${i}`)));
      expect(results.filter((r) => r.status === 200)).toHaveLength(2);
      for (const r of results.filter((x) => x.status !== 200)) {
        expect([r.status, r.body.code]).toEqual([429, 'sponsored_quota_exceeded']);
        expect(r.body.error).toContain(owner);
        expect(r.headers['retry-after']).toBe('2'); // until UTC midnight
      }
      expect(await sponsoredUsed(sql, '2031-08-01')).toBe(2);
      // another owner still finds the pool
      const other = await register(capped, { name: 'another-owner', owner: stranger.did }, freshIp(), await signedHeaders(capped, stranger));
      expect(other.status, JSON.stringify(other.body)).toBe(200);
      expect(other.body).toMatchObject({ owner: stranger.did, sponsored: true });
      expect(await sponsoredUsed(sql, '2031-08-01')).toBe(3);
      // the owner's day ends at UTC midnight
      clock = new Date('2031-08-02T00:00:00.500Z');
      expect((await sponsored(capped, 'next-day')).status).toBe(200);
    } finally {
      clock = start;
      await capped.close();
    }
  });

  it('records an owner only when the request is signed by that DID (issue 20 item 8)', async () => {
    const start = clock;
    try {
      clock = new Date('2031-07-01T10:00:00.000Z');
      // unsigned: the plain registration, no owner, nothing sponsored, no workflow
      const unsigned = await register(app, { name: 'claims-an-owner', owner });
      expect(unsigned.status).toBe(200);
      expect(unsigned.body).toMatchObject({ name: 'claims-an-owner', owner: null, sponsored: false });
      expect(unsigned.body.directory_record).toBeUndefined();
      expect(await sponsoredUsed(sql, '2031-07-01')).toBe(0);
      await expect(t.client.workflow.getHandle(`registry-sponsored:${unsigned.body.id}`).describe()).rejects.toThrow();
      const [row] = await sql`select owner, sponsored from registry_keys where id = ${unsigned.body.id}`;
      expect(row).toEqual({ owner: null, sponsored: false });

      // signed by another DID: refused as on every signed route, nothing registered
      const other = await register(app, { name: 'wrong-signer', owner }, freshIp(), await signedHeaders(app, stranger));
      expect(other.status).toBe(403);
      expect(other.body.code).toBe('auth_did_mismatch');
      // a partial signature is refused too (never silently unsigned)
      const partial = await register(app, { name: 'partial', owner }, freshIp(), { 'x-service-did': owner });
      expect(partial.status).toBe(401);
      expect(partial.body.code).toBe('auth_header_missing');
      const [{ count }] = await sql`select count(*)::int as count from registry_keys where name in ('wrong-signer', 'partial')`;
      expect(count).toBe(0);

      // signed by the owner: sponsored
      const signed = await sponsored(app, 'signed-owner');
      expect(signed.status).toBe(200);
      expect(signed.body).toMatchObject({ owner, sponsored: true });
      expect(await sponsoredUsed(sql, '2031-07-01')).toBe(1);
    } finally {
      clock = start;
    }
  });

  it('without Temporal a sponsored registration is withdrawn: 503, no row, its budget place given back', async () => {
    const start = clock;
    const down = await buildTestApp(
      { ...stack.env, RATE_LIMIT_MAX: '100000', SPONSORED_DAILY_BUDGET: '7' },
      { sql, ledger: stack.ledger, temporal: async () => Promise.reject(new Error('temporal down')), now: () => clock },
    );
    try {
      clock = new Date('2031-06-01T10:00:00.000Z');
      const r = await sponsored(down, 'no-temporal');
      expect(r.status).toBe(503);
      expect(r.body.code).toBe('service_unavailable');
      expect(await sponsoredUsed(sql, '2031-06-01')).toBe(0);
      // and the owner's own place of the day (issue 26 item 8)
      const own = await sql`select count from quota_counters where scope = 'registry.sponsored.owner' and subject = ${owner} and window_start = ${new Date('2031-06-01T00:00:00.000Z')}`;
      expect(own.map((r) => r.count)).toEqual([0]);
      const [{ count }] = await sql`select count(*)::int as count from registry_keys where name = 'no-temporal'`;
      expect(count).toBe(0);
    } finally {
      clock = start;
      await down.close();
    }
  });
});

describe('the keyed free tier: a keyed request counts against its address, then its key', () => {
  let sql: Sql;
  let sqlB: Sql;
  let a: FastifyInstance;
  let b: FastifyInstance;

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 4 });
    sqlB = createSql(inject('databaseUrl'), { max: 4 });
    const env = { RATE_LIMIT_MAX: '3', REGISTRY_KEY_RATE_LIMIT_MAX: '5' };
    a = await buildTestApp(env, { sql });
    b = await buildTestApp(env, { sql: sqlB });
  });
  afterAll(async () => {
    await a?.close();
    await b?.close();
    await sql?.end();
    await sqlB?.end();
  });

  it('the address\'s 3 hold for its keyed requests, the key\'s 5 across addresses, headers of the tighter; a revoked key gets its 401 on every route', async () => {
    const ip = freshIp();
    const reg = await register(a, { name: 'keyed' }, ip);
    expect(reg.status).toBe(200);
    expect(reg.headers['x-ratelimit-limit']).toBe('3'); // the registration itself is anonymous: the address's window
    const key = reg.body.api_key as string;

    // from the registration's address: its window (1 of 3 used) is the tighter, and it holds for the key
    const here: Res[] = [];
    for (let i = 0; i < 3; i++) here.push(await call(a, 'GET', '/catalog', { ip, key }));
    expect(here.map((r) => r.status)).toEqual([200, 200, 429]);
    expect(here.map((r) => r.headers['x-ratelimit-limit'])).toEqual(['3', '3', '3']);
    expect(here.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['1', '0', '0']);
    expect(here[2]!.body.code).toBe('rate_limit_exceeded');
    expect(here[2]!.body.error).not.toMatch(/for this key/);
    expect(Number(here[2]!.headers['retry-after'])).toBeGreaterThan(0);

    // from other addresses: the key's own window (5, 2 used: the refused request never reached it) holds
    // across them; its headers once it has fewer left than the address (the address's on a tie)
    const elsewhere: Res[] = [];
    for (let i = 0; i < 4; i++) elsewhere.push(await call(a, 'GET', '/catalog', { ip: freshIp(), key }));
    expect(elsewhere.map((r) => r.status)).toEqual([200, 200, 200, 429]);
    expect(elsewhere.map((r) => r.headers['x-ratelimit-limit'])).toEqual(['3', '5', '5', '5']);
    expect(elsewhere.map((r) => r.headers['x-ratelimit-remaining'])).toEqual(['2', '1', '0', '0']);
    expect(elsewhere[3]!.body.code).toBe('rate_limit_exceeded');
    expect(elsewhere[3]!.body.error).toMatch(/for this key/);
    expect(Number(elsewhere[3]!.headers['x-ratelimit-reset'])).toBeGreaterThan(1e9);

    // an unknown key from a fresh address: 401, never the anonymous quota
    const other = freshIp();
    const unknown = await call(a, 'GET', '/catalog', { ip: other, key: `apk_${'B'.repeat(43)}` });
    expect(unknown.status).toBe(401);
    expect(unknown.body.code).toBe('agent_key_invalid');
    expect(unknown.headers['x-ratelimit-limit']).toBe('3'); // counted against the address

    // revoke on instance b (the key's window on a is used up; b keeps its own count in memory), and
    // instance a refuses the key within a moment (NOTIFY registry_key_changed)
    expect((await call(b, 'GET', '/catalog', { ip: freshIp(), key })).status).toBe(200);
    expect((await call(b, 'DELETE', '/api/v1/agents/me', { ip: freshIp(), key })).status).toBe(200);
    const onA = await eventually(
      () => call(a, 'GET', '/api/meta/errors', { ip: freshIp(), key }),
      (r) => r.status === 401,
    );
    expect(onA.status).toBe(401);
    expect(onA.body.code).toBe('agent_key_revoked');
    expect(onA.headers['x-ratelimit-limit']).toBe('3'); // a refused key is counted against the address
    const onB = await call(b, 'GET', '/catalog', { ip: freshIp(), key });
    expect(onB.status).toBe(401);
    expect(onB.body.code).toBe('agent_key_revoked');
  });

  it('health probes stay exempt, even with a bad key; an admin-style Bearer token is not taken for a key', async () => {
    const health = await call(a, 'GET', '/health', { key: `apk_${'C'.repeat(43)}` });
    expect(health.status).toBe(200);
    const adminish = await call(a, 'GET', '/catalog', { ip: freshIp(), headers: { authorization: 'Bearer some-admin-token' } });
    expect(adminish.status).toBe(200);
    expect(adminish.headers['x-ratelimit-limit']).toBe('3');
  });
});

// issue 26 item 6: one address registers 5 keys a day; counted only in their own windows, its keys used
// to give it 5x (then 25x) RATE_LIMIT_MAX per IP, and each key was looked up before any limit applied.
describe('keys do not lift the per-address limit', () => {
  it('three keys registered from one address: the address meets RATE_LIMIT_MAX (60) at its request 61, before any key is looked up', async () => {
    const sql = createSql(inject('databaseUrl'), { max: 2 });
    const app = await buildTestApp({}, { sql }); // the defaults: 60 per address, 300 per key, 5 registrations per address a day
    try {
      const ip = freshIp();
      const answers: Res[] = [];
      const keys: string[] = [];
      for (let i = 0; i < 3; i++) {
        const reg = await register(app, { name: `three-keys-${i}` }, ip);
        answers.push(reg);
        keys.push(reg.body.api_key as string);
      }
      for (let i = 0; answers.length < 60; i++) answers.push(await call(app, 'GET', '/catalog', { ip, key: keys[i % 3] }));
      expect(answers.map((r) => r.status)).toEqual(Array(60).fill(200));
      const sixtyFirst = await call(app, 'GET', '/catalog', { ip, key: keys[0] });
      expect(sixtyFirst.status).toBe(429);
      // the address's window was the tighter one all along
      expect(answers.slice(3).map((r) => r.headers['x-ratelimit-limit'])).toEqual(Array(57).fill('60'));
      expect(answers[59]!.headers['x-ratelimit-remaining']).toBe('0');
      expect(sixtyFirst.body).toMatchObject({ code: 'rate_limit_exceeded' });
      expect(sixtyFirst.headers['x-ratelimit-limit']).toBe('60');
      expect(sixtyFirst.headers['x-ratelimit-remaining']).toBe('0');
      // every key, and a credential nobody issued: the same 429, the credential never looked at (an
      // unknown key's 401 would need the lookup)
      for (const key of [keys[1]!, keys[2]!, `apk_${'D'.repeat(43)}`]) {
        const r = await call(app, 'GET', '/catalog', { ip, key });
        expect(r.status).toBe(429);
        expect(r.body.code).toBe('rate_limit_exceeded');
      }
      // from another address the keys still answer (their own windows are far from full)
      expect((await call(app, 'GET', '/catalog', { ip: freshIp(), key: keys[1] })).status).toBe(200);
    } finally {
      await app.close();
      await sql.end();
    }
  });
});

describe('the registry key never reaches a log line', () => {
  it('register, /me, the token endpoint and a revoke at trace level: neither the key nor the token is logged', async () => {
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const sql = createSql(inject('databaseUrl'), { max: 2 });
    const app = await buildApp({ config: testConfig({ LOG_LEVEL: 'trace', RATE_LIMIT_MAX: '100000' }), sql }, { logger: { stream } });
    try {
      const reg = await register(app, { name: 'logged?' });
      const key = reg.body.api_key as string;
      app.log.info({ registration: reg.body }, 'a careless log of the registration answer');
      const tok = await app.inject({
        method: 'POST',
        url: '/oauth/token',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        payload: `grant_type=client_credentials&client_id=${reg.body.id}&client_secret=${key}`,
      });
      const token = tok.json().access_token as string;
      app.log.info({ answer: tok.json() }, 'a careless log of the token answer');
      expect((await call(app, 'GET', '/api/v1/agents/me', { key })).status).toBe(200);
      expect((await call(app, 'GET', '/api/v1/agents/me', { key: token })).status).toBe(200);
      expect((await call(app, 'DELETE', '/api/v1/agents/me', { key })).status).toBe(200);
      expect((await call(app, 'GET', '/api/v1/agents/me', { key })).status).toBe(401);
      const log = lines.join('');
      expect(log).toContain('/api/v1/agents/me'); // requests were logged...
      expect(log).toContain('[redacted]');
      expect(log).not.toContain(key.slice(4)); // ...never the key
      expect(log).not.toContain(token.split('.')[2]); // nor the token
    } finally {
      await app.close();
      await sql.end();
    }
  });
});

describe('the keyed window in Redis, shared by two API instances', async () => {
  const redisUp = await isPortOpen(6379);
  it.skipIf(!redisUp)('requests with one key to either instance count against one window of its own', async () => {
    const redis = new Redis('redis://127.0.0.1:6379', { keyPrefix: `test-${randomUUID()}-` });
    const sql = createSql(inject('databaseUrl'), { max: 2 });
    const env = { RATE_LIMIT_MAX: '2', REGISTRY_KEY_RATE_LIMIT_MAX: '4' };
    const a = await buildTestApp(env, { sql, redis });
    const b = await buildTestApp(env, { sql, redis });
    try {
      const ip = freshIp();
      const key = (await register(a, { name: 'shared-window' }, ip)).body.api_key as string;
      const statuses: number[] = [];
      // from five addresses (each within its own window): the key's window is the one that fills
      for (const app of [a, b, a, b, a]) statuses.push((await call(app, 'GET', '/catalog', { ip: freshIp(), key })).status);
      expect(statuses).toEqual([200, 200, 200, 200, 429]);
      // the address's own window (2, one used by the registration) is separate
      expect((await call(b, 'GET', '/catalog', { ip })).status).toBe(200);
      expect((await call(a, 'GET', '/catalog', { ip })).status).toBe(429);
    } finally {
      await a.close();
      await b.close();
      await sql.end();
      redis.disconnect();
    }
  });
});
