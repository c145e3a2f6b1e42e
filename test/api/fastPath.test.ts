/**
 * The cheap plugin chain (issue 8, "The fast path"; api/plugins/security.ts, api/requestLogger.ts):
 * one hook writes the security and CORS headers, @fastify/cors only answers preflights, request
 * loggers are made lazily and successes log at debug. These check that the answers and the log
 * lines kept what the plugins guaranteed.
 */
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import cors from '@fastify/cors';
import { describe, expect, it } from 'vitest';
import { buildApp } from '../../api/app.js';
import { testConfig } from '../support/app.js';

function captureLog() {
  const lines: Array<Record<string, unknown>> = [];
  const stream = new Writable({
    write(chunk, _enc, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { lines, stream };
}

const CORS_HEADERS = ['access-control-allow-origin', 'access-control-expose-headers', 'vary'];

/** @fastify/cors 11 with the options the app used before the single hook: the reference. */
async function referenceCors(corsOrigins: string) {
  const ref = Fastify({ logger: false });
  await ref.register(cors, {
    origin: corsOrigins === '*' ? true : corsOrigins.split(',').map((o) => o.trim()),
    preflightContinue: true,
    strictPreflight: false,
    maxAge: 600,
    exposedHeaders: ['X-RateLimit-Limit', 'X-RateLimit-Remaining', 'X-RateLimit-Reset', 'PAYMENT-REQUIRED', 'PAYMENT-RESPONSE', 'X-Request-Id'],
  });
  ref.get('/health', async () => ({}));
  return ref;
}

describe('fast path: headers', () => {
  for (const corsOrigins of ['*', 'https://a.example,https://b.example', 'https://a.example,*']) {
    it(`CORS headers of browser requests are those @fastify/cors gives; other requests get Vary: Origin only (CORS_ORIGINS=${corsOrigins})`, async () => {
      const app = await buildApp({ config: testConfig({ CORS_ORIGINS: corsOrigins }) }, { logger: false });
      const ref = await referenceCors(corsOrigins);
      for (const origin of [undefined, 'https://a.example', 'https://c.example', 'null']) {
        const headers = origin === undefined ? {} : { origin };
        const [got, want] = await Promise.all([app.inject({ url: '/health', headers }), ref.inject({ url: '/health', headers })]);
        expect(got.statusCode).toBe(200);
        // a browser's request (with Origin): what @fastify/cors gives, and always Vary: Origin;
        // without Origin (not a CORS request): only Vary: Origin
        const expected = origin === undefined ? { vary: 'Origin' } : { ...Object.fromEntries(CORS_HEADERS.map((h) => [h, want.headers[h]])), vary: 'Origin' };
        for (const h of CORS_HEADERS) expect([origin, h, got.headers[h]]).toEqual([origin, h, expected[h as keyof typeof expected]]);
      }
      await Promise.all([app.close(), ref.close()]);
    });
  }

  it('every answer carries the security headers, CORS and x-request-id; preflights also the rate limit and CORS preflight headers', async () => {
    const app = await buildApp({ config: testConfig({ CORS_ORIGINS: 'https://a.example' }) }, { logger: false });
    const ok = await app.inject({ url: '/health', headers: { origin: 'https://a.example', 'x-request-id': 'probe-1' } });
    const missing = await app.inject({ url: '/nowhere', headers: { origin: 'https://a.example' } });
    const preflight = await app.inject({
      method: 'OPTIONS',
      url: '/health',
      headers: { origin: 'https://a.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'x-custom' },
    });
    for (const res of [ok, missing, preflight]) {
      expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['strict-transport-security']).toBeDefined();
      expect(res.headers['access-control-allow-origin']).toBe('https://a.example');
      expect(res.headers['access-control-expose-headers']).toContain('X-RateLimit-Remaining');
      expect(res.headers['x-request-id']).toMatch(/^[A-Za-z0-9._-]+$/);
    }
    expect(ok.headers['x-request-id']).toBe('probe-1');
    expect(missing.statusCode).toBe(404);
    expect(missing.headers['x-ratelimit-limit']).toBeDefined();
    expect(preflight.statusCode).toBeLessThan(300);
    expect(preflight.headers['access-control-allow-methods']).toBe('GET,HEAD,POST');
    expect(preflight.headers['access-control-allow-headers']).toBe('x-custom');
    expect(preflight.headers['access-control-max-age']).toBe('600');
    expect(preflight.headers.vary).toBe('Origin, Access-Control-Request-Headers');
    expect(preflight.headers['x-ratelimit-limit']).toBeDefined();
    await app.close();
  });
});

describe('fast path: API and document security headers', () => {
  it('HTML pages carry helmet\'s document set; JSON answers the API set and none of the document-only headers', async () => {
    const app = await buildApp({ config: testConfig({}) }, { logger: false });
    const urls = ['/rules', '/rules/AR-001', '/docs', '/what-is-agent-readiness'];
    const pages = await Promise.all(urls.map((url) => app.inject({ url })));
    for (const [i, res] of pages.entries()) {
      expect([urls[i], res.statusCode < 400]).toEqual([urls[i], true]);
      expect(res.headers['content-security-policy']).toContain("default-src 'self'");
      expect(res.headers['content-security-policy']).toContain("script-src 'self' 'unsafe-inline'");
      expect(res.headers['cross-origin-opener-policy']).toBe('same-origin');
      expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['x-request-id']).toBeDefined();
    }
    expect(pages.some((res) => String(res.headers['content-type']).startsWith('text/html'))).toBe(true);
    for (const url of ['/health', '/catalog', '/rules.json', '/nowhere']) {
      const res = await app.inject({ url });
      expect(res.headers['content-security-policy']).toBe("default-src 'none'; frame-ancestors 'none'");
      expect(res.headers['x-frame-options']).toBe('DENY');
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['strict-transport-security']).toBe('max-age=31536000; includeSubDomains');
      for (const h of ['cross-origin-opener-policy', 'origin-agent-cluster', 'x-dns-prefetch-control', 'x-download-options', 'x-permitted-cross-domain-policies', 'x-xss-protection', 'referrer-policy', 'cross-origin-resource-policy']) {
        expect([url, h, res.headers[h]]).toEqual([url, h, undefined]);
      }
    }
    await app.close();
  });
});

describe('fast path: access log', () => {
  async function logged(env: Record<string, string>, url: string) {
    const { lines, stream } = captureLog();
    const app = await buildApp({ config: testConfig(env) }, { logger: { stream } });
    app.get('/__test/boom', async () => {
      throw new Error('boom');
    });
    const res = await app.inject({ url });
    await app.close();
    return { res, lines: lines.filter((l) => l.reqId === res.headers['x-request-id']) };
  }

  it('at info, a success writes no line; an answer >= 400 writes one access line with its request id', async () => {
    const ok = await logged({ LOG_LEVEL: 'info' }, '/health');
    expect(ok.res.statusCode).toBe(200);
    expect(ok.lines).toEqual([]);
    const missing = await logged({ LOG_LEVEL: 'info' }, '/nowhere');
    expect(missing.lines).toEqual([expect.objectContaining({ level: 30, msg: 'request completed', statusCode: 404, url: '/nowhere' })]);
  });

  it('an unhandled error is logged at error with the request id', async () => {
    const { res, lines } = await logged({ LOG_LEVEL: 'info' }, '/__test/boom');
    expect(res.statusCode).toBe(500);
    expect(lines).toContainEqual(expect.objectContaining({ level: 50, msg: 'unhandled error', err: expect.objectContaining({ message: 'boom' }) }));
    expect(lines).toContainEqual(expect.objectContaining({ level: 30, msg: 'request completed', statusCode: 500 }));
  });

  it('successes are written at debug, or at info when slower than ACCESS_LOG_SLOW_MS', async () => {
    const debug = await logged({ LOG_LEVEL: 'debug' }, '/health');
    expect(debug.lines).toEqual([expect.objectContaining({ level: 20, msg: 'request completed', statusCode: 200 })]);
    const slow = await logged({ LOG_LEVEL: 'info', ACCESS_LOG_SLOW_MS: '0' }, '/health');
    expect(slow.lines).toEqual([expect.objectContaining({ level: 30, msg: 'request completed', statusCode: 200 })]);
  });
});
