import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../support/app.js';
import { recordSecret } from '../support/secrets.js';
import { isCatalogCode } from '../../domain/errors.js';
import { BODY_LIMIT_BYTES } from '../../api/app.js';
import { createSql } from '../../db/client.js';
import { freePort } from '../../scripts/lib/ports.js';

/** a role PostgreSQL refuses every connection of (too_many_connections, SQLSTATE 53300), as when its slots are used up */
const NO_SLOT_ROLE = 'agent_passport_test_no_slot';
/** a port nothing listens on (picked free, never bound) */
const closedPort = () => freePort();

function expectErrorBody(body: Record<string, unknown>, code: string) {
  expect(body.code).toBe(code);
  expect(typeof body.error).toBe('string');
  expect(isCatalogCode(body.code as string)).toBe(true);
  expect(JSON.stringify(body)).not.toMatch(/at .*\.ts:\d+|node_modules/); // no stack traces
}

describe('error handling', () => {
  const adminToken = randomBytes(16).toString('hex');
  let app: FastifyInstance;

  beforeAll(async () => {
    recordSecret('admin token', adminToken); // for the secrets scan (the codec key is recorded by testConfig)
    app = await buildTestApp({
      PAYLOAD_CODEC_KEY: randomBytes(32).toString('hex'),
      ADMIN_TOKEN_SHA256: createHash('sha256').update(adminToken).digest('hex'),
    });
    // Routes whose PostgreSQL cannot serve: nothing listens on the port; the role has no connection slot left.
    app.get('/__test/db-refused', async () => {
      const sql = createSql(`postgres://postgres@127.0.0.1:${await closedPort()}/postgres`);
      try {
        return await sql`select 1`;
      } finally {
        await sql.end({ timeout: 1 });
      }
    });
    app.get('/__test/db-full', async () => {
      const base = new URL(inject('databaseUrl'));
      base.username = NO_SLOT_ROLE;
      const sql = createSql(base.toString());
      try {
        return await sql`select 1`;
      } finally {
        await sql.end({ timeout: 1 });
      }
    });
    // A route that fails unexpectedly, to see what leaks.
    app.get('/__test/boom', async () => {
      throw new Error('database password is hunter2');
    });
  });
  afterAll(() => app.close());

  const auth = () => ({ authorization: `Bearer ${adminToken}` });

  it('unknown routes answer 404 route_not_found', async () => {
    const res = await app.inject('/no/such/route');
    expect(res.statusCode).toBe(404);
    expectErrorBody(res.json(), 'route_not_found');
  });

  it('validation failures answer 400 invalid_request naming the offending field', async () => {
    const res = await app.inject({ method: 'POST', url: '/codec/decode', headers: auth(), payload: { payloads: [{ data: 42 }] } });
    expect(res.statusCode).toBe(400);
    expectErrorBody(res.json(), 'invalid_request');
    expect(res.json().hint).toMatch(/payloads\.0\.data/);
  });

  it('malformed JSON answers 400 invalid_request', async () => {
    const res = await app.inject({ method: 'POST', url: '/codec/decode', headers: { ...auth(), 'content-type': 'application/json' }, payload: '{"payloads": [' });
    expect(res.statusCode).toBe(400);
    expectErrorBody(res.json(), 'invalid_request');
  });

  it('bodies over the limit answer 413 payload_too_large', async () => {
    const res = await app.inject({
      method: 'POST',
      url: '/codec/decode',
      headers: { ...auth(), 'content-type': 'application/json' },
      payload: JSON.stringify({ payloads: [{ data: 'a'.repeat(BODY_LIMIT_BYTES) }] }),
    });
    expect(res.statusCode).toBe(413);
    expectErrorBody(res.json(), 'payload_too_large');
  });

  it('unsupported content types answer 415 unsupported_media_type', async () => {
    const res = await app.inject({ method: 'POST', url: '/codec/decode', headers: { ...auth(), 'content-type': 'text/csv' }, payload: 'a,b' });
    expect(res.statusCode).toBe(415);
    expectErrorBody(res.json(), 'unsupported_media_type');
  });

  it('unexpected errors answer 500 internal_server_error without internals', async () => {
    const res = await app.inject('/__test/boom');
    expect(res.statusCode).toBe(500);
    expectErrorBody(res.json(), 'internal_server_error');
    expect(res.body).not.toContain('hunter2');
    expect(res.json().retryable).toBe(true);
  });

  it('a database that cannot serve (connection refused, no connection slot left) answers 503 service_unavailable, retryable', async () => {
    const admin = createSql(inject('databaseUrl'));
    try {
      await admin.unsafe(`do $$ begin if not exists (select 1 from pg_roles where rolname = '${NO_SLOT_ROLE}') then create role ${NO_SLOT_ROLE} login connection limit 0; end if; end $$`);
    } finally {
      await admin.end();
    }
    for (const url of ['/__test/db-refused', '/__test/db-full']) {
      const res = await app.inject(url);
      expect(res.statusCode, url).toBe(503);
      expectErrorBody(res.json(), 'service_unavailable');
      expect(res.json().retryable).toBe(true);
    }
  });

  it('admin routes: no token 401, wrong token 403, right token 200', async () => {
    const body = { payloads: [] };
    const none = await app.inject({ method: 'POST', url: '/codec/decode', payload: body });
    expect(none.statusCode).toBe(401);
    expectErrorBody(none.json(), 'admin_auth_required');
    // RFC 9110 11.6.1 / RFC 6750 3: the 401 names the Bearer scheme, the admin realm and the resource metadata (RFC 9728 5.1)
    expect(none.headers['www-authenticate']).toBe('Bearer realm="agent-passport-admin", resource_metadata="http://localhost:80/.well-known/oauth-protected-resource"');
    const wrong = await app.inject({ method: 'POST', url: '/codec/decode', headers: { authorization: 'Bearer nope' }, payload: body });
    expect(wrong.statusCode).toBe(403);
    expectErrorBody(wrong.json(), 'admin_auth_invalid');
    const right = await app.inject({ method: 'POST', url: '/codec/decode', headers: auth(), payload: body });
    expect(right.statusCode).toBe(200);
  });

  it('the codec endpoint round-trips payloads for the Temporal UI', async () => {
    const plain = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('{"a":1}').toString('base64') };
    const enc = await app.inject({ method: 'POST', url: '/codec/encode', headers: auth(), payload: { payloads: [plain] } });
    expect(enc.statusCode).toBe(200);
    expect(enc.json().payloads[0].data).not.toBe(plain.data);
    const dec = await app.inject({ method: 'POST', url: '/codec/decode', headers: auth(), payload: enc.json() });
    expect(dec.json().payloads[0]).toEqual(plain);
  });

  it('every response carries a request id and security headers', async () => {
    const res = await app.inject('/health');
    expect(res.headers['x-request-id']).toBeTruthy();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
  });
});
