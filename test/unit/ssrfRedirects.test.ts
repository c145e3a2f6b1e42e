// net/safeFetch's per-call redirect policy (issue 19 item 8): with redirects 'same-host' (the
// ownership proof's well-known file) a redirect to another host name is not followed, even when that
// name leads to the same server; redirects on the same host are. The default still follows any host.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { safeFetch, SafeFetchError } from '../../net/safeFetch.js';

describe('safeFetch redirects: same-host', () => {
  let server: http.Server;
  let port: number;
  const hits: string[] = [];
  /** other.test and site.test both lead to the loopback server */
  const lookup = async (host: string) => {
    if (host === 'other.test' || host === 'site.test') return [{ address: '127.0.0.1', family: 4 }];
    throw Object.assign(new Error('ENOTFOUND'), { code: 'ENOTFOUND' });
  };

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      hits.push(`${req.headers.host} ${req.url}`);
      const url = new URL(req.url!, 'http://x');
      if (url.pathname === '/to-other') return void res.writeHead(302, { location: `http://other.test:${port}/token` }).end();
      if (url.pathname === '/to-same') return void res.writeHead(301, { location: '/token' }).end();
      if (url.pathname === '/to-same-absolute') return void res.writeHead(307, { location: `http://SITE.test:${port}/token` }).end();
      if (url.pathname === '/token') return void res.writeHead(200, { 'content-type': 'text/plain' }).end('the-token\n');
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });

  afterAll(async () => {
    await new Promise<void>((r) => server.close(() => r()));
  });

  it('does not follow a redirect to another host; the other host is never asked', async () => {
    hits.length = 0;
    const err = await safeFetch(`http://site.test:${port}/to-other`, { allowPrivate: true, lookup, redirects: 'same-host' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SafeFetchError);
    expect((err as SafeFetchError).reason).toBe('redirect_refused');
    expect(hits).toEqual([`site.test:${port} /to-other`]);
  });

  it('follows redirects on the same host (relative, or absolute in another case)', async () => {
    for (const path of ['/to-same', '/to-same-absolute']) {
      const res = await safeFetch(`http://site.test:${port}${path}`, { allowPrivate: true, lookup, redirects: 'same-host' });
      expect(res.status, path).toBe(200);
      expect(res.body.toString()).toBe('the-token\n');
    }
  });

  it('by default still follows a redirect to another host (agent cards, verifiers)', async () => {
    const res = await safeFetch(`http://site.test:${port}/to-other`, { allowPrivate: true, lookup });
    expect(res.status).toBe(200);
    expect(res.url).toBe(`http://other.test:${port}/token`);
  });
});
