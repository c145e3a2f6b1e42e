/**
 * Issue 8 hardening over HTTP, on routes that need no ledger: malformed URLs, rate-limit headers
 * on every answer, client request ids, shutdown, the codec's callers, and bounds on strings.
 * (Ledger-backed rows -- /did/%25, /passport/address/%25, sign-in -- are in hardeningLedger.test.ts.)
 */
import { createHash, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { buildTestApp } from '../support/app.js';
import { recordSecret } from '../support/secrets.js';
import { isCatalogCode } from '../../domain/errors.js';
import { ECHO_MAX_CHARS } from '../../api/errors.js';

/** A fetch response's JSON body. */
async function jsonOf(res: Response): Promise<Record<string, any>> {
  return (await res.json()) as Record<string, any>;
}


function expectErrorBody(body: Record<string, unknown>, code: string) {
  expect(body.code).toBe(code);
  expect(typeof body.error).toBe('string');
  expect(isCatalogCode(body.code as string)).toBe(true);
}

/** A raw GET that sends the path byte for byte (fetch would normalise or refuse a malformed one). */
function rawGet(base: string, path: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

const codecKey = randomBytes(32).toString('hex');
const adminToken = randomBytes(16).toString('hex');
const adminSha = createHash('sha256').update(adminToken).digest('hex');
recordSecret('admin token', adminToken); // for the secrets scan (the codec key is recorded by testConfig)
const plainPayload = { metadata: { encoding: Buffer.from('json/plain').toString('base64') }, data: Buffer.from('{"a":1}').toString('base64') };

describe('issue 8 hardening (no ledger)', () => {
  const apps: FastifyInstance[] = [];
  const build = async (env: Record<string, string> = {}) => {
    const app = await buildTestApp(env);
    apps.push(app);
    return app;
  };
  afterEach(async () => {
    await Promise.all(apps.splice(0).map((a) => a.close()));
  });

  it('a malformed percent-encoding in the URL path answers 400 invalid_request in the error schema, counted', async () => {
    const app = await build({ RATE_LIMIT_MAX: '10' });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    for (const path of ['/did/%E0%A4%A', '/passport/address/%zz', '/nope%', '/audit/%/1']) {
      const res = await rawGet(base, path);
      expect(res.status, path).toBe(400);
      expectErrorBody(JSON.parse(res.body), 'invalid_request');
      expect(res.headers['x-ratelimit-limit']).toBe('10');
      expect(res.headers['x-request-id']).toBeTruthy();
    }
    // Four requests counted: the next answer has 10 - 5 left.
    expect((await rawGet(base, '/catalog')).headers['x-ratelimit-remaining']).toBe('5');
  });

  it('a path parameter over the router limit answers 400 invalid_request', async () => {
    const app = await build();
    const res = await app.inject(`/api/agent/${'a'.repeat(300)}/card`);
    expect(res.statusCode).toBe(400);
    expectErrorBody(res.json(), 'invalid_request');
  });

  it('404s for unknown routes and CORS preflights carry X-RateLimit-* and are counted', async () => {
    const app = await build({ RATE_LIMIT_MAX: '4' });
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const before = Math.floor(Date.now() / 1000);
    const notFound = await fetch(`${base}/no/such/route`);
    expect(notFound.status).toBe(404);
    expectErrorBody(await jsonOf(notFound), 'route_not_found');
    expect(notFound.headers.get('x-ratelimit-limit')).toBe('4');
    expect(notFound.headers.get('x-ratelimit-remaining')).toBe('3');
    const reset = Number(notFound.headers.get('x-ratelimit-reset'));
    expect(reset).toBeGreaterThanOrEqual(before); // a Unix timestamp, not seconds from now

    const preflight = await fetch(`${base}/catalog`, { method: 'OPTIONS', headers: { origin: 'https://agent.example', 'access-control-request-method': 'GET' } });
    expect(preflight.status).toBeLessThan(300);
    expect(preflight.headers.get('access-control-allow-origin')).toBeTruthy();
    expect(preflight.headers.get('x-ratelimit-remaining')).toBe('2');

    await fetch(`${base}/catalog`);
    await fetch(`${base}/catalog`);
    const over = await fetch(`${base}/catalog`, { method: 'OPTIONS', headers: { origin: 'https://agent.example', 'access-control-request-method': 'GET' } });
    expect(over.status).toBe(429);
    expectErrorBody(await jsonOf(over), 'rate_limit_exceeded');
    // The 429 still carries CORS headers, so a browser client can read it.
    expect(over.headers.get('access-control-allow-origin')).toBeTruthy();
    const over404 = await fetch(`${base}/no/such/route`);
    expect(over404.status).toBe(429);
  });

  it("a client's x-request-id is kept only when it is a short token", async () => {
    const app = await build();
    const ok = await app.inject({ url: '/health', headers: { 'x-request-id': 'trace-01.AB_c' } });
    expect(ok.headers['x-request-id']).toBe('trace-01.AB_c');
    for (const bad of ['a'.repeat(65), 'has space', 'new\tline', '<script>', '']) {
      const res = await app.inject({ url: '/health', headers: { 'x-request-id': bad } });
      const id = res.headers['x-request-id'] as string;
      expect(id).not.toBe(bad);
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('while shutting down every answer is 503 service_unavailable in the error schema', async () => {
    const app = await build();
    expect((await app.inject('/catalog')).statusCode).toBe(200);
    app.markClosing();
    for (const url of ['/catalog', '/health', '/no/such/route']) {
      const res = await app.inject(url);
      expect(res.statusCode, url).toBe(503);
      expectErrorBody(res.json(), 'service_unavailable');
      expect(res.json().retryable).toBe(true);
    }
  });

  it('app.close() lets in-flight work finish and closes its keep-alive connection instead of waiting for the keep-alive timeout', async () => {
    const app = await build();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let entered!: () => void;
    const inHandler = new Promise<void>((r) => (entered = r));
    app.get('/__test/slow', async () => {
      entered();
      await gate;
      return { ok: true };
    });
    // Registered after buildApp's own preClose hook, so it runs once the app is in its closing state.
    let closingStarted!: () => void;
    const closing = new Promise<void>((r) => (closingStarted = r));
    app.addHook('preClose', async () => closingStarted());
    const base = await app.listen({ host: '127.0.0.1', port: 0 });
    const { Agent } = await import('node:http');
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const url = new URL(base);
    const get = (path: string) =>
      new Promise<{ status: number; connection?: string }>((resolve, reject) => {
        const req = httpRequest({ host: url.hostname, port: url.port, path, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve({ status: res.statusCode!, connection: res.headers.connection }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      expect((await get('/catalog')).status).toBe(200); // the socket is kept alive
      const slow = get('/__test/slow');
      await inHandler;
      const closed = app.close();
      await closing;
      release();
      const done = await slow;
      expect(done.status).toBe(200);
      expect(done.connection).toBe('close');
      await closed; // resolves without waiting for the keep-alive timeout
    } finally {
      agent.destroy();
    }
  });

  describe('codec: who may call it, and the rate limit', () => {
    const decode = (app: FastifyInstance, opts: { token?: string; remoteAddress?: string; headers?: Record<string, string> } = {}) =>
      app.inject({
        method: 'POST',
        url: '/codec/decode',
        remoteAddress: opts.remoteAddress,
        headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), ...opts.headers },
        payload: { payloads: [] },
      });

    it('in development a loopback caller without a token is served (the Temporal UI), a remote one is not', async () => {
      const app = await build({ NODE_ENV: 'development', PAYLOAD_CODEC_KEY: codecKey, ADMIN_TOKEN_SHA256: adminSha });
      expect((await decode(app, { remoteAddress: '127.0.0.1' })).statusCode).toBe(200);
      expect((await decode(app, { remoteAddress: '::1' })).statusCode).toBe(200);
      const remote = await decode(app, { remoteAddress: '203.0.113.7' });
      expect(remote.statusCode).toBe(401);
      expectErrorBody(remote.json(), 'admin_auth_required');
      // A proxy on this machine forwarding someone else's request is not "loopback".
      const proxied = await decode(app, { remoteAddress: '127.0.0.1', headers: { 'x-forwarded-for': '203.0.113.7' } });
      expect(proxied.statusCode).toBe(401);
      expect((await decode(app, { remoteAddress: '203.0.113.7', token: adminToken })).statusCode).toBe(200);
    });

    it('outside development the codec always needs the admin token, even from loopback', async () => {
      for (const NODE_ENV of ['test', 'production']) {
        const app = await build({ NODE_ENV, PAYLOAD_CODEC_KEY: codecKey, ADMIN_TOKEN_SHA256: adminSha });
        const none = await decode(app, { remoteAddress: '127.0.0.1' });
        expect(none.statusCode, NODE_ENV).toBe(401);
        expectErrorBody(none.json(), 'admin_auth_required');
        const wrong = await decode(app, { token: 'nope' });
        expect(wrong.statusCode).toBe(403);
        expectErrorBody(wrong.json(), 'admin_auth_invalid');
        expect((await decode(app, { token: adminToken })).statusCode).toBe(200);
      }
    });

    it('shows an unencrypted payload as it is stored (display only; the worker and the API refuse it)', async () => {
      const app = await build({ NODE_ENV: 'production', PAYLOAD_CODEC_KEY: codecKey, ADMIN_TOKEN_SHA256: adminSha });
      const res = await app.inject({ method: 'POST', url: '/codec/decode', headers: { authorization: `Bearer ${adminToken}` }, payload: { payloads: [plainPayload] } });
      expect(res.statusCode).toBe(200);
      expect(res.json().payloads).toEqual([plainPayload]);
    });

    it('with no admin token configured, the codec is closed outside development', async () => {
      const app = await build({ NODE_ENV: 'test', PAYLOAD_CODEC_KEY: codecKey });
      expect((await decode(app, { remoteAddress: '127.0.0.1' })).statusCode).toBe(401);
      expect((await decode(app, { token: adminToken })).statusCode).toBe(403);
    });

    it('operators are not rate-limited on /codec/* (one call per payload); anonymous callers are', async () => {
      const app = await build({ NODE_ENV: 'test', PAYLOAD_CODEC_KEY: codecKey, ADMIN_TOKEN_SHA256: adminSha, RATE_LIMIT_MAX: '3' });
      const enc = await app.inject({ method: 'POST', url: '/codec/encode', headers: { authorization: `Bearer ${adminToken}` }, payload: { payloads: [plainPayload] } });
      expect(enc.statusCode).toBe(200);
      for (let i = 0; i < 10; i++) {
        const res = await app.inject({ method: 'POST', url: '/codec/decode', headers: { authorization: `Bearer ${adminToken}` }, payload: enc.json() });
        expect(res.statusCode).toBe(200);
        expect(res.json().payloads[0]).toEqual(plainPayload);
      }
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await decode(app, { token: 'wrong' })).statusCode);
      expect(statuses).toEqual([403, 403, 403, 429]);
    });

    it('in development, the loopback UI is not rate-limited on the codec either, preflights included', async () => {
      const app = await build({ NODE_ENV: 'development', PAYLOAD_CODEC_KEY: codecKey, RATE_LIMIT_MAX: '2' });
      const preflight = { origin: 'http://localhost:8233', 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type,x-namespace' };
      for (let i = 0; i < 6; i++) {
        const pre = await app.inject({ method: 'OPTIONS', url: '/codec/decode', remoteAddress: '127.0.0.1', headers: preflight });
        expect(pre.statusCode).toBeLessThan(300);
        expect((await decode(app, { remoteAddress: '127.0.0.1' })).statusCode).toBe(200);
      }
      // Other routes still count.
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await app.inject({ url: '/catalog', remoteAddress: '127.0.0.1' })).statusCode);
      expect(statuses).toEqual([200, 200, 429]);
    });
  });

  describe('bounds on strings and echoed values', () => {
    it('query strings are bounded and echoed values cut short', async () => {
      const app = await build();
      const long = await app.inject(`/events?eventName=${'E'.repeat(5000)}`);
      expect(long.statusCode).toBe(400);
      expectErrorBody(long.json(), 'invalid_request');
      expect(long.body.length).toBeLessThan(1500);
      const offset = await app.inject('/events?offset=99999999999999999999');
      expect(offset.statusCode).toBe(400);
      expectErrorBody(offset.json(), 'invalid_request');
    });

    it('echo() cuts a value to a short quoted string', async () => {
      const { echo } = await import('../../api/errors.js');
      const out = echo('x'.repeat(1000));
      expect(out.length).toBeLessThanOrEqual(ECHO_MAX_CHARS + 2);
      expect(out.startsWith('"x')).toBe(true);
      expect(echo('0.0.12')).toBe('"0.0.12"');
    });
  });
});
