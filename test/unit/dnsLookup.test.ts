// net/dnsLookup: the one DNS module of the trust scans and the ownership checks, against a loopback
// DNS server (TRUST_DNS_SERVERS' form "ip:port"): addresses, "does not resolve", TXT records, and
// safeFetch refusing a host the lookup cannot resolve.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dnsResolver, hostLookup, HostNotFoundError, isDnsNotFound } from '../../net/dnsLookup.js';
import { safeFetch, SafeFetchError } from '../../net/safeFetch.js';
import { startTestDns, type TestDnsServer } from '../support/testDns.js';

let dns: TestDnsServer;

beforeAll(async () => {
  dns = await startTestDns();
  dns.setA('one.dns.test', ['192.0.2.7', '198.51.100.9']);
  dns.setTxt('_agent-passport.one.dns.test', ['v=spf1 -all', 'agent-passport-verification=tok']);
});

afterAll(async () => {
  await dns?.close();
});

describe('net/dnsLookup', () => {
  it('hostLookup on configured servers: every A address, HostNotFoundError for a name without one', async () => {
    const lookup = hostLookup([dns.address]);
    expect(await lookup('one.dns.test')).toEqual([
      { address: '192.0.2.7', family: 4 },
      { address: '198.51.100.9', family: 4 },
    ]);
    await expect(lookup('none.dns.test')).rejects.toBeInstanceOf(HostNotFoundError);
    expect(dns.queries('none.dns.test')).toBeGreaterThan(0);
  });

  it('hostLookup without servers is the system resolver (localhost resolves, .invalid does not)', async () => {
    const lookup = hostLookup([]);
    expect((await lookup('localhost')).length).toBeGreaterThan(0);
    await expect(lookup('nothing.invalid')).rejects.toBeInstanceOf(HostNotFoundError);
  });

  it('dnsResolver reads TXT records on the same servers; a missing record is "not found", not a failure', async () => {
    const resolver = dnsResolver([dns.address], { timeoutMs: 1_000 });
    expect((await resolver.resolveTxt('_agent-passport.one.dns.test')).map((r) => r.join(''))).toEqual(['v=spf1 -all', 'agent-passport-verification=tok']);
    const err = await resolver.resolveTxt('_agent-passport.none.dns.test').catch((e: unknown) => e);
    expect(isDnsNotFound(err)).toBe(true);
    expect(isDnsNotFound(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe(false);
  });

  it('as safeFetch lookup: an unresolvable host is dns_failed, a resolving one is checked against the address rule', async () => {
    const lookup = hostLookup([dns.address]);
    const reason = (p: Promise<unknown>) => p.then(() => 'ok', (e: unknown) => (e instanceof SafeFetchError ? e.reason : String(e)));
    expect(await reason(safeFetch('http://none.dns.test/', { lookup }))).toBe('dns_failed');
    dns.setA('private.dns.test', ['10.0.0.1']);
    expect(await reason(safeFetch('http://private.dns.test/', { lookup }))).toBe('address_refused');
  });
});
