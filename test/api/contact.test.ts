// /contact against real PostgreSQL (SPEC 4.7; DESIGN.md 10 "Content"): the form page, POST as JSON
// and as an HTML form stored in contact_messages, validation and size cap, the per-address cap
// under concurrency, and GET /admin/contact-messages behind the admin token.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { recordSecret } from '../support/secrets.js';
import { CONTACT_CAP } from '../../api/routes/contact.js';

const ADMIN_TOKEN = 'contact-test-admin-token';

let ipCounter = 0;
function freshIp(): string {
  ipCounter++;
  return `203.0.${(process.pid % 200) + 10}.${ipCounter}`;
}

describe('/contact (PostgreSQL)', () => {
  let sql: Sql;
  let app: FastifyInstance;

  const post = (payload: unknown, ip = freshIp(), contentType = 'application/json') =>
    app.inject({ method: 'POST', url: '/contact', remoteAddress: ip, headers: { 'content-type': contentType }, payload: typeof payload === 'string' ? payload : JSON.stringify(payload) });

  beforeAll(async () => {
    recordSecret('admin token', ADMIN_TOKEN); // for the secrets scan
    sql = createSql(inject('databaseUrl'), { max: 8 });
    app = await buildTestApp({ RATE_LIMIT_MAX: '100000', ADMIN_TOKEN_SHA256: createHash('sha256').update(ADMIN_TOKEN).digest('hex') }, { sql });
  });
  afterAll(async () => {
    await app?.close();
    await sql?.end();
  });

  it('serves the form page in the content layout', async () => {
    const r = await app.inject('/contact');
    expect(r.statusCode).toBe(200);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.body).toContain('<form method="post" action="/contact">');
    for (const field of ['name="name"', 'name="email"', 'name="message"']) expect(r.body).toContain(field);
    expect(r.body).toMatch(/<link rel="canonical" href="http:\/\/localhost(:\d+)?\/contact">/);
  });

  it('stores a JSON message and answers 201 { id, received_at }', async () => {
    const r = await post({ name: '  Ada  ', email: 'ada@example.org', message: 'Hello\nfrom a test' });
    expect(r.statusCode).toBe(201);
    const body = r.json();
    expect(Object.keys(body).sort()).toEqual(['id', 'received_at']);
    const [row] = await sql`select name, email, message, octet_length(ip_sha256) as ip_len from contact_messages where id = ${body.id}`;
    expect(row).toEqual({ name: 'Ada', email: 'ada@example.org', message: 'Hello\nfrom a test', ip_len: 32 });
  });

  it('stores a form post and answers an HTML confirmation', async () => {
    const form = new URLSearchParams({ name: 'Form User', email: 'form@example.org', message: 'Sent <b>from</b> the form & more' }).toString();
    const r = await post(form, freshIp(), 'application/x-www-form-urlencoded');
    expect(r.statusCode).toBe(201);
    expect(r.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(r.body).toContain('Message received');
    const [row] = await sql`select message from contact_messages where email = 'form@example.org'`;
    expect(row?.message).toBe('Sent <b>from</b> the form & more');
  });

  it('refuses invalid messages with 400 invalid_request, oversized bodies with 413, XML with 415', async () => {
    const bad: unknown[] = [
      {},
      { name: 'A', email: 'not-an-email', message: 'x' },
      { name: '', email: 'a@example.org', message: 'x' },
      { name: 'A', email: 'a@example.org', message: '   ' },
      { name: 'A', email: 'a@example.org', message: 'x'.repeat(5001) },
      { name: 'A\nB', email: 'a@example.org', message: 'x' },
      { name: 'A', email: 'a@example.org', message: 'bell\u0007' },
      { name: 'A', email: 'a@example.org', message: 'x', extra: 1 },
    ];
    for (const b of bad) {
      const r = await post(b);
      expect(r.statusCode, JSON.stringify(b).slice(0, 80)).toBe(400);
      expect(r.json().code).toBe('invalid_request');
    }
    const big = await post({ name: 'A', email: 'a@example.org', message: 'x'.repeat(17 * 1024) });
    expect(big.statusCode).toBe(413);
    expect(big.json().code).toBe('payload_too_large');
    const text = await post('<m>hello</m>', freshIp(), 'application/xml');
    expect(text.statusCode).toBe(415);
    expect(text.json().code).toBe('unsupported_media_type');
  });

  it(`takes at most ${CONTACT_CAP} messages per address per hour, also under 12 concurrent posts`, async () => {
    const ip = freshIp();
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => post({ name: 'Burst', email: `burst${i}@example.org`, message: `n${i}` }, ip)));
    const codes = results.map((r) => r.statusCode);
    expect(codes.filter((c) => c === 201)).toHaveLength(CONTACT_CAP);
    const refused = results.filter((r) => r.statusCode === 429);
    expect(refused).toHaveLength(12 - CONTACT_CAP);
    expect(refused[0]!.json().code).toBe('rate_limit_exceeded');
    expect(Number(refused[0]!.headers['retry-after'])).toBeGreaterThan(0);
    const [{ n }] = await sql`select count(*)::int as n from contact_messages where name = 'Burst'`;
    expect(n).toBe(CONTACT_CAP);
    // another address is not affected
    expect((await post({ name: 'Other', email: 'other@example.org', message: 'hi' })).statusCode).toBe(201);
  });

  it('lists messages newest first to the admin only', async () => {
    expect((await app.inject('/admin/contact-messages')).statusCode).toBe(401);
    const wrong = await app.inject({ url: '/admin/contact-messages', headers: { authorization: 'Bearer nope' } });
    expect(wrong.statusCode).toBe(403);
    expect(wrong.json().code).toBe('admin_auth_invalid');
    await post({ name: 'Newest', email: 'newest@example.org', message: 'last one' });
    const r = await app.inject({ url: '/admin/contact-messages?limit=2', headers: { authorization: `Bearer ${ADMIN_TOKEN}` } });
    expect(r.statusCode).toBe(200);
    expect(r.headers['cache-control']).toBe('no-store');
    const body = r.json();
    expect(body.limit).toBe(2);
    expect(body.count).toBe(2);
    expect(body.total).toBeGreaterThanOrEqual(9);
    expect(body.messages[0]).toMatchObject({ name: 'Newest', email: 'newest@example.org', message: 'last one' });
    expect(Object.keys(body.messages[0]).sort()).toEqual(['created_at', 'email', 'id', 'message', 'name']);
  });
});
