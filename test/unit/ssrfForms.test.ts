// The SSRF guard (net/safeFetch.ts) against every spelling of a private address, proven refused
// WITHOUT a connection: a local server listening on all loopback addresses (127.0.0.1 and ::1)
// counts the TCP connections it gets, and every refused form points at it.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPublicAddress, safeFetch, SafeFetchError } from '../../net/safeFetch.js';

async function reason(p: Promise<unknown>): Promise<string> {
  try {
    await p;
  } catch (err) {
    expect(err).toBeInstanceOf(SafeFetchError);
    return (err as SafeFetchError).reason;
  }
  return 'fetched';
}

describe('SSRF guard: private addresses in every form are refused without a connection', () => {
  /** the victim: counts connections, on '::' (dual stack: 127.0.0.0/8 and ::1) */
  let victim: http.Server;
  let port: number;
  let connections = 0;
  /** an allowed host that redirects wherever it is told */
  let redirector: http.Server;
  let redirectorPort: number;
  let redirects = 0;

  beforeAll(async () => {
    victim = http.createServer((_req, res) => res.end('secret'));
    victim.on('connection', () => connections++);
    await new Promise<void>((r) => victim.listen({ port: 0, host: '::', ipv6Only: false }, r));
    port = (victim.address() as AddressInfo).port;
    redirector = http.createServer((req, res) => {
      redirects++;
      res.writeHead(302, { location: new URL(req.url!, 'http://x').searchParams.get('to')! }).end();
    });
    await new Promise<void>((r) => redirector.listen(0, '127.0.0.2', r));
    redirectorPort = (redirector.address() as AddressInfo).port;
  });
  afterAll(async () => {
    victim.closeAllConnections();
    await new Promise((r) => victim.close(r));
    await new Promise((r) => redirector.close(r));
  });

  it('the victim is reachable when the address rule is lifted (so a 0 count below means something)', async () => {
    const before = connections;
    const r = await safeFetch(`http://127.0.0.1:${port}/`, { allowPrivate: true });
    expect(r.body.toString()).toBe('secret');
    const v6 = await safeFetch(`http://[::1]:${port}/`, { allowPrivate: true });
    expect(v6.body.toString()).toBe('secret');
    expect(connections).toBe(before + 2);
  });

  const loopbackForms = [
    '127.0.0.1',
    '127.1', // short form
    '2130706433', // decimal
    '0x7f000001', // hex
    '0x7f.0.0.1',
    '0177.0.0.1', // octal
    '0177.0000.0000.0001',
    '0', // 0.0.0.0 reaches the local host on Linux
    '0.0.0.0',
    '[::1]',
    '[0:0:0:0:0:0:0:1]',
    '[::]',
    '[::ffff:127.0.0.1]', // IPv4-mapped IPv6
    '[::ffff:7f00:1]',
    '[0:0:0:0:0:ffff:127.0.0.1]',
    '[::127.0.0.1]', // IPv4-compatible IPv6 (deprecated)
    '[64:ff9b::7f00:1]', // NAT64
    '[2002:7f00:1::]', // 6to4
  ];

  it.each(loopbackForms)('http://%s:port/ is refused before any connection', async (host) => {
    const before = connections;
    expect(await reason(safeFetch(`http://${host}:${port}/`, { timeoutMs: 2_000 }))).toBe('address_refused');
    expect(connections).toBe(before);
  });

  it.each([
    '10.0.0.1',
    '10.255.255.254',
    '172.16.0.1',
    '192.168.0.1',
    '100.64.0.1',
    '169.254.169.254', // cloud metadata
    '2852039166', // 169.254.169.254 in decimal
    '0xA9FEA9FE', // in hex
    '0xa9.0xfe.0xa9.0xfe',
    '0251.0376.0251.0376', // in octal
    '[::ffff:169.254.169.254]',
    '[::ffff:a9fe:a9fe]',
    '[fe80::1]',
    '[fc00::1]',
    '[fd00:ec2::254]', // AWS IPv6 metadata
    '224.0.0.1',
    '255.255.255.255',
  ])('http://%s/ is refused as an address, never tried', async (host) => {
    // a tried connection would end in 'timeout' or 'network', not 'address_refused'
    expect(await reason(safeFetch(`http://${host}/latest/meta-data/`, { timeoutMs: 2_000 }))).toBe('address_refused');
  });

  it('a name that resolves to a private address (any of its addresses) is refused without a connection', async () => {
    const before = connections;
    for (const answer of [[{ address: '127.0.0.1', family: 4 }], [{ address: '::1', family: 6 }], [{ address: '8.8.8.8', family: 4 }, { address: '127.0.0.1', family: 4 }], [{ address: '::ffff:127.0.0.1', family: 6 }]]) {
      expect(await reason(safeFetch(`http://internal.example:${port}/`, { lookup: async () => answer }))).toBe('address_refused');
    }
    // the system resolver's localhost
    expect(await reason(safeFetch(`http://localhost:${port}/`))).toBe('address_refused');
    expect(connections).toBe(before);
  });

  it('a redirect to a private address, in any form, is not followed', async () => {
    const allowed = (a: string) => a === '127.0.0.2';
    const before = connections;
    const targets = [`http://127.0.0.1:${port}/`, `http://2130706433:${port}/`, `http://[::1]:${port}/`, `http://[::ffff:127.0.0.1]:${port}/`, `http://localhost:${port}/`, `http://0:${port}/`, 'http://169.254.169.254/latest/meta-data/'];
    for (const to of targets) {
      expect(await reason(safeFetch(`http://127.0.0.2:${redirectorPort}/?to=${encodeURIComponent(to)}`, { addressAllowed: allowed }))).toBe('address_refused');
    }
    expect(redirects).toBe(targets.length);
    expect(connections).toBe(before);
  });

  it('isPublicAddress: only public unicast, IPv6 only in 2000::/3', () => {
    expect(['8.8.8.8', '2001:4860:4860::8888', '2606:4700::1111'].every(isPublicAddress)).toBe(true);
    expect(['::7f00:1', 'fec0::1', '100::1', '2001:db8::1', '::ffff:8.8.8.8', '198.18.0.1', '192.0.0.1'].some(isPublicAddress)).toBe(false);
  });
});
