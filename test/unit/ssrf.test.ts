// The SSRF guard of outbound fetches (net/safeFetch.ts): address ranges, the checked address is
// the one connected to, redirects re-checked, deadline and size cap. Local HTTP servers only.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPublicAddress, safeFetch, SafeFetchError } from '../../net/safeFetch.js';
import { agentFetchOptions, loadConfig } from '../../config/index.js';

const testConfig = (env: Record<string, string>) => loadConfig({ LOG_LEVEL: 'silent', ...env });

describe('isPublicAddress', () => {
  it.each([
    ['8.8.8.8', true],
    ['1.1.1.1', true],
    ['2001:4860:4860::8888', true],
    ['10.0.0.1', false],
    ['172.16.5.4', false],
    ['192.168.1.1', false],
    ['127.0.0.1', false],
    ['169.254.169.254', false],
    ['100.64.0.1', false],
    ['224.0.0.1', false],
    ['240.0.0.1', false],
    ['255.255.255.255', false],
    ['0.0.0.0', false],
    ['192.0.2.1', false],
    ['::1', false],
    ['::', false],
    ['fe80::1', false],
    ['fc00::1', false],
    ['ff02::1', false],
    ['::ffff:8.8.8.8', false],
    ['::ffff:127.0.0.1', false],
    ['64:ff9b::7f00:1', false],
    ['2002:7f00:1::', false],
    ['not-an-ip', false],
  ])('%s -> %s', (address, expected) => {
    expect(isPublicAddress(address)).toBe(expected);
  });
});

async function failure(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SafeFetchError);
    return (err as SafeFetchError).reason;
  }
  throw new Error('expected a SafeFetchError');
}

describe('safeFetch', () => {
  let server: http.Server;
  let port: number;
  let hits: string[] = [];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(`${req.headers.host} ${req.url}`);
      const url = new URL(req.url!, 'http://x');
      switch (url.pathname) {
        case '/card':
          res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ did: 'did:hedera:local:0.0.1001' }));
          return;
        case '/big':
          res.writeHead(200, { 'content-type': 'application/json' });
          // no content-length: chunked, so the cap must count bytes as they arrive
          for (let i = 0; i < 70; i++) res.write('x'.repeat(1024));
          res.end();
          return;
        case '/big-declared':
          res.writeHead(200, { 'content-length': String(70 * 1024) }).end('x'.repeat(70 * 1024));
          return;
        case '/slow':
          return; // never answers
        case '/redirect':
          res.writeHead(302, { location: url.searchParams.get('to')! }).end();
          return;
        case '/loop':
          res.writeHead(301, { location: '/loop' }).end();
          return;
        default:
          res.writeHead(404).end();
      }
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
  });

  const onlyLocal = (a: string) => a === '127.0.0.1';

  it('refuses loopback by default, fetches it when the address rule is lifted', async () => {
    expect(await failure(safeFetch(`http://127.0.0.1:${port}/card`))).toBe('address_refused');
    const r = await safeFetch(`http://127.0.0.1:${port}/card`, { allowPrivate: true });
    expect(r.status).toBe(200);
    expect(JSON.parse(r.body.toString())).toEqual({ did: 'did:hedera:local:0.0.1001' });
  });

  it('allowLoopback (agents\' URLs in development: config agentFetchOptions) admits loopback and nothing else private', async () => {
    const r = await safeFetch(`http://127.0.0.1:${port}/card`, { allowLoopback: true });
    expect(r.status).toBe(200);
    expect(await failure(safeFetch('http://intranet.test/card', { allowLoopback: true, lookup: async () => [{ address: '10.1.2.3', family: 4 }] }))).toBe('address_refused');
    expect(await failure(safeFetch('http://meta.test/card', { allowLoopback: true, lookup: async () => [{ address: '169.254.169.254', family: 4 }] }))).toBe('address_refused');
    expect(await failure(safeFetch(`http://[::ffff:127.0.0.1]:${port}/card`, { allowLoopback: true }))).toBe('address_refused');
    expect(agentFetchOptions(testConfig({ NODE_ENV: 'development' }))).toEqual({ allowPrivate: false, allowLoopback: true });
    expect(agentFetchOptions(testConfig({ NODE_ENV: 'test' }))).toEqual({ allowPrivate: false, allowLoopback: false });
  });

  it('refuses a host name that resolves to a private address, and one with any private address among public ones', async () => {
    expect(await failure(safeFetch('http://intranet.test/card', { lookup: async () => [{ address: '10.1.2.3', family: 4 }] }))).toBe('address_refused');
    expect(
      await failure(
        safeFetch('http://mixed.test/card', {
          lookup: async () => [
            { address: '8.8.8.8', family: 4 },
            { address: '127.0.0.1', family: 4 },
          ],
        }),
      ),
    ).toBe('address_refused');
  });

  it('refuses IPv4-mapped IPv6 literals, non-http schemes and credentials', async () => {
    expect(await failure(safeFetch(`http://[::ffff:127.0.0.1]:${port}/card`))).toBe('address_refused');
    expect(await failure(safeFetch('file:///etc/passwd'))).toBe('invalid_url');
    expect(await failure(safeFetch('gopher://example.com/'))).toBe('invalid_url');
    expect(await failure(safeFetch(`http://user:pw@127.0.0.1:${port}/card`, { allowPrivate: true }))).toBe('invalid_url');
    expect(await failure(safeFetch('not a url'))).toBe('invalid_url');
  });

  it('connects to the address it checked, not to a fresh DNS answer (no rebinding)', async () => {
    // card.invalid never resolves through real DNS: the request can only reach the server through
    // the address the guard's lookup returned and checked.
    hits = [];
    let lookups = 0;
    const r = await safeFetch(`http://card.invalid:${port}/card`, {
      addressAllowed: onlyLocal,
      lookup: async () => {
        lookups++;
        return [{ address: '127.0.0.1', family: 4 }];
      },
    });
    expect(r.status).toBe(200);
    expect(r.address).toBe('127.0.0.1');
    expect(lookups).toBe(1);
    expect(hits).toEqual([`card.invalid:${port} /card`]);
  });

  it('re-checks every redirect: a redirect to a refused address is not followed', async () => {
    hits = [];
    const to = encodeURIComponent(`http://127.0.0.2:${port}/card`);
    expect(await failure(safeFetch(`http://127.0.0.1:${port}/redirect?to=${to}`, { addressAllowed: onlyLocal }))).toBe('address_refused');
    expect(hits).toHaveLength(1);
    const ok = await safeFetch(`http://127.0.0.1:${port}/redirect?to=%2Fcard`, { addressAllowed: onlyLocal });
    expect([ok.status, ok.url]).toEqual([200, `http://127.0.0.1:${port}/card`]);
  });

  it('stops after the redirect limit', async () => {
    expect(await failure(safeFetch(`http://127.0.0.1:${port}/loop`, { allowPrivate: true, maxRedirects: 2 }))).toBe('too_many_redirects');
  });

  it('caps the body size, declared or streamed', async () => {
    expect(await failure(safeFetch(`http://127.0.0.1:${port}/big`, { allowPrivate: true }))).toBe('too_large');
    expect(await failure(safeFetch(`http://127.0.0.1:${port}/big-declared`, { allowPrivate: true }))).toBe('too_large');
    const r = await safeFetch(`http://127.0.0.1:${port}/big`, { allowPrivate: true, maxBytes: 80 * 1024 });
    expect(r.body.length).toBe(70 * 1024);
  });

  it('gives up at the deadline', async () => {
    expect(await failure(safeFetch(`http://127.0.0.1:${port}/slow`, { allowPrivate: true, timeoutMs: 300 }))).toBe('timeout');
  });

  it('returns non-2xx answers for the caller to judge', async () => {
    const r = await safeFetch(`http://127.0.0.1:${port}/missing`, { allowPrivate: true });
    expect(r.status).toBe(404);
  });
});
