// GET /api/trust/{domain} end to end over HTTP: the API against PostgreSQL (domain ownership),
// test domains served by loopback HTTP servers (TRUST_ALLOW_PRIVATE with TRUST_FETCH_ORIGINS) and
// a DNS server on a loopback port (TRUST_DNS_SERVERS). The test recomputes every evidence hash, the
// Merkle root, the profile hash and the snapshot hash itself (canonicalize + sha256, its own Merkle
// code) and verifies the signature with the key published in the signature directory.
import { createHash, createPublicKey, verify, type JsonWebKey } from 'node:crypto';
import canonicalize from 'canonicalize';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp, testConfig } from '../support/app.js';
import { TrustSnapshots } from '../../api/trust/snapshots.js';
import { PROBE_IDS } from '../../domain/trust/rules.js';
import { confirmAttestation, openAttestation } from '../../db/queries/trustAttestations.js';
import { startTestDns, type TestDnsServer } from '../support/testDns.js';
import { startTestSite, type SiteFile as File, type TestSite as Site } from '../support/testSite.js';

type Json = Record<string, any>;
const sha256 = (data: string | Buffer) => createHash('sha256').update(data).digest('hex');

/** The Merkle convention of /rules, written again here: sha256(left || right) over raw bytes, odd node promoted. */
function merkle(leaves: string[]): string {
  let level: Buffer[] = leaves.map((h) => Buffer.from(h, 'hex'));
  while (level.length > 1) {
    const next: Buffer[] = [];
    for (let i = 0; i < level.length; i += 2) next.push(i + 1 < level.length ? createHash('sha256').update(Buffer.concat([level[i]!, level[i + 1]!])).digest() : level[i]!);
    level = next;
  }
  return level[0]!.toString('hex');
}

/** Files of a fully agent-ready domain at `origin`. */
function readyFiles(origin: string): Record<string, File> {
  const j = (value: unknown, type = 'application/json'): File => ({ status: 200, type, body: JSON.stringify(value) });
  return {
    '/.well-known/agent-card.json': j({ name: 'Shop', description: 'Sells things', url: 'https://shop.example/a2a', version: '1.0.0', capabilities: {}, skills: [{ id: 'buy', name: 'Buy', description: 'Buys' }] }),
    '/robots.txt': { status: 200, type: 'text/plain', body: 'User-agent: *\nAllow: /\n' },
    '/llms.txt': { status: 200, type: 'text/markdown', body: '# Shop\n\n> Sells things\n' },
    '/.well-known/oauth-authorization-server': j({ issuer: origin, token_endpoint: `${origin}/token`, response_types_supported: ['code'] }),
    '/.well-known/oauth-protected-resource': j({ resource: `${origin}/api`, authorization_servers: [origin] }),
    '/.well-known/api-catalog': j({ linkset: [{ anchor: `${origin}/api` }] }, 'application/linkset+json'),
    '/.well-known/security.txt': { status: 200, type: 'text/plain', body: 'Contact: mailto:security@shop.example\nExpires: 2099-01-01T00:00:00.000Z\n' },
    '/.well-known/http-message-signatures-directory': j({ keys: [{ kty: 'OKP', crv: 'Ed25519', x: 'JrQLj5P_89iXES9-vFgrIy29clF9CC_oPPsw3c5D0bs' }] }, 'application/http-message-signatures-directory+json'),
    '/.well-known/x402.json': j({ x402Version: 1, accepts: [] }),
    '/openapi.json': j({ openapi: '3.1.0', info: { title: 'Shop', version: '1' }, paths: {} }),
    '/.well-known/mcp/server-card.json': j({ serverInfo: { name: 'shop', version: '1' }, capabilities: {} }),
    '/': { status: 200, type: 'text/html', body: '<!doctype html><title>Shop</title>' },
  };
}

const run = Math.random().toString(36).slice(2, 8);
const D = {
  verify: `verify-${run}.snapshot.test`,
  grow: `grow-${run}.snapshot.test`,
  cached: `cached-${run}.snapshot.test`,
  flight: `flight-${run}.snapshot.test`,
  chain: `chain-${run}.snapshot.test`,
};

describe('GET /api/trust/{domain} (loopback sites, DNS server, PostgreSQL)', () => {
  let dns: TestDnsServer;
  let sites: Record<keyof typeof D, Site>;
  let sql: Sql;
  /** snapshots cached for an hour */
  let app: FastifyInstance;
  /** no cache: every request scans */
  let fresh: FastifyInstance;
  /** production address rule (TRUST_ALLOW_PRIVATE=false), names resolved by the test DNS server */
  let strict: FastifyInstance;

  const env = () => ({
    TRUST_ALLOW_PRIVATE: 'true',
    TRUST_DNS_SERVERS: dns.address,
    TRUST_FETCH_ORIGINS: Object.entries(D).map(([k, d]) => `${d}=${sites[k as keyof typeof D].origin}`).join(','),
    TRUST_SNAPSHOT_TTL_MS: '3600000',
    RATE_LIMIT_MAX: '100000',
    TRUST_SCANS_DAILY_PER_IP: '100000',
    TRUST_SCANS_HOURLY_PER_SITE: '100000',
  });

  const get = async (a: FastifyInstance, url: string, headers: Record<string, string> = {}) => {
    const res = await a.inject({ method: 'GET', url, headers });
    return { status: res.statusCode, body: res.json() as Json, headers: res.headers };
  };

  beforeAll(async () => {
    dns = await startTestDns();
    sites = Object.fromEntries(await Promise.all(Object.keys(D).map(async (k) => [k, await startTestSite()]))) as Record<keyof typeof D, Site>;
    sql = createSql(inject('databaseUrl'), { max: 2 });
    app = await buildTestApp(env(), { sql });
    fresh = await buildTestApp({ ...env(), TRUST_SNAPSHOT_TTL_MS: '0' }, { sql });
    strict = await buildTestApp({ TRUST_DNS_SERVERS: dns.address, RATE_LIMIT_MAX: '100000', TRUST_SCANS_DAILY_PER_IP: '100000', TRUST_SCANS_HOURLY_PER_SITE: '100000' }, { sql });
  }, 60_000);

  afterAll(async () => {
    await app?.close();
    await fresh?.close();
    await strict?.close();
    await sql?.end();
    await dns?.close();
    for (const s of Object.values(sites ?? {})) await s.close();
  });

  it('answers a snapshot with the SPEC fields whose evidence, Merkle root, profile hash, snapshot hash and signature all recompute', async () => {
    const site = sites.verify;
    // some files present, some wrong, the rest missing: every probe gets a distinct body
    const ready = readyFiles(site.origin);
    for (const p of ['/.well-known/agent-card.json', '/robots.txt', '/openapi.json']) site.files.set(p, ready[p]!);
    site.files.set('/llms.txt', { status: 200, type: 'text/plain', body: 'no heading here' });

    const r = await get(app, `/api/trust/${D.verify}`);
    expect(r.status).toBe(200);
    const s = r.body;
    // SPEC section 2 fields and types
    expect(Object.keys(s)).toEqual(expect.arrayContaining(['snapshot_version', 'spec_version', 'domain', 'generated_at', 'profile_ref', 'evidence_root', 'score_summary', 'domain_ownership', 'integrity']));
    expect(s.on_chain).toBeUndefined();
    expect(s.domain).toBe(D.verify);
    expect(typeof s.snapshot_version).toBe('string');
    expect(s.spec_version).toBe('0.13.0');
    expect(Number.isNaN(Date.parse(s.generated_at))).toBe(false);
    expect(s.profile_ref).toEqual({ profile_version: expect.any(String), profile_hash: expect.stringMatching(/^[0-9a-f]{64}$/), endpoint: '/rules' });
    expect(s.domain_ownership).toEqual({ method: 'none', verified: false, verified_at: null, challenge_token: '', proof: '' });
    expect(s.integrity).toEqual({ snapshot_hash: expect.stringMatching(/^[0-9a-f]{64}$/), signature_algorithm: 'Ed25519', signature: expect.stringMatching(/^[0-9a-f]{128}$/), public_key: expect.stringMatching(/^[0-9a-f]{64}$/), key_id: expect.any(String) });

    // the rule catalog, and the profile hash over it
    const catalog = await get(app, '/rules.json');
    expect(catalog.status).toBe(200);
    const rules = catalog.body.rules as Json[];
    expect(rules.length).toBeGreaterThanOrEqual(20);
    expect(sha256(canonicalize({ profile_version: catalog.body.profile_version, rules })!)).toBe(catalog.body.profile_hash);
    expect(s.profile_ref).toMatchObject({ profile_version: catalog.body.profile_version, profile_hash: catalog.body.profile_hash });

    // evidence: sha256 of what the site served for each rule's path, in rule order
    const expected = rules.map((rule) => sha256(site.served(rule.fetches.path)));
    expect(s.evidence_root.evidence_hashes).toEqual(expected);
    expect(s.evidence_root.assertion_count).toBe(rules.length);
    expect(s.evidence_root.merkle_root).toBe(merkle(expected));
    expect(s.rule_results.map((x: Json) => x.id)).toEqual(rules.map((x) => x.id));

    // score: recomputed from the per-rule results and the weights
    const weight = (id: string) => rules.find((x) => x.id === id)!.weight as number;
    const all = rules.reduce((n, x) => n + x.weight, 0);
    const passed = s.rule_results.filter((x: Json) => x.result === 'passed');
    expect(s.score_summary).toMatchObject({
      total: Math.round((100 * passed.reduce((n: number, x: Json) => n + weight(x.id), 0)) / all),
      verified_rules: passed.length,
      total_rules: rules.length,
      gaps: s.rule_results.filter((x: Json) => x.result === 'gap').length,
      conflicts: 0,
    });
    expect(s.rule_results.find((x: Json) => x.id === 'AR-001').result).toBe('passed');
    expect(s.rule_results.find((x: Json) => x.id === 'AR-008').result).toBe('gap');

    // snapshot hash: RFC 8785 JSON of the snapshot without integrity and on_chain
    const { integrity, on_chain: _onChain, ...unsigned } = s;
    expect(sha256(canonicalize(unsigned)!)).toBe(integrity.snapshot_hash);

    // signature: Ed25519 over the 32 hash bytes, with the key of the signature directory
    const dir = await get(app, '/.well-known/http-message-signatures-directory');
    expect(dir.status).toBe(200);
    expect(dir.headers['content-type']).toMatch(/^application\/json/);
    const jwk = (dir.body.keys as Json[]).find((k) => k.kid === integrity.key_id)!;
    expect(jwk).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(Buffer.from(jwk.x, 'base64url').toString('hex')).toBe(integrity.public_key);
    const key = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    expect(verify(null, Buffer.from(integrity.snapshot_hash, 'hex'), key, Buffer.from(integrity.signature, 'hex'))).toBe(true);
    // a changed field breaks the hash, hence the signature
    const tampered = sha256(canonicalize({ ...unsigned, score_summary: { ...unsigned.score_summary, total: 100 } })!);
    expect(verify(null, Buffer.from(tampered, 'hex'), key, Buffer.from(integrity.signature, 'hex'))).toBe(false);

    // the draft's media type when asked for it
    const typed = await get(app, '/.well-known/http-message-signatures-directory', { accept: 'application/http-message-signatures-directory+json' });
    expect(typed.headers['content-type']).toMatch(/^application\/http-message-signatures-directory\+json/);
    expect(typed.body).toEqual(dir.body);
  });

  it('a domain that adds its files climbs from F to A; a robots.txt shutting agents out of its card is a conflict', async () => {
    const site = sites.grow;
    const empty = await get(fresh, `/api/trust/${D.grow}`);
    expect(empty.status).toBe(200);
    expect(empty.body.score_summary).toMatchObject({ grade: 'F', gaps: expect.any(Number), conflicts: 0 });
    const low = empty.body.score_summary.total as number;

    for (const [p, f] of Object.entries(readyFiles(site.origin))) site.files.set(p, f);
    const ready = await get(fresh, `/api/trust/${D.grow}`);
    expect(ready.body.score_summary.grade).toBe('A');
    expect(ready.body.score_summary.total).toBeGreaterThan(low);
    // everything but TLS passes: the test origin is plain http
    expect(ready.body.rule_results.filter((x: Json) => x.result !== 'passed').map((x: Json) => x.id)).toEqual(['AR-021']);
    expect(ready.body.evidence_root.merkle_root).not.toBe(empty.body.evidence_root.merkle_root);

    site.files.set('/robots.txt', { status: 200, type: 'text/plain', body: 'User-agent: *\nDisallow: /\n' });
    const blocked = await get(fresh, `/api/trust/${D.grow}`);
    expect(blocked.body.score_summary.conflicts).toBe(1);
    expect(blocked.body.rule_results.find((x: Json) => x.id === 'AR-007').result).toBe('conflict');
    expect(blocked.body.score_summary.total).toBeLessThan(ready.body.score_summary.total);
  });

  it('serves a cached snapshot without fetching again; a changed ownership is re-signed from the cached scan', async () => {
    const site = sites.cached;
    const first = await get(app, `/api/trust/${D.cached}`);
    expect(first.status).toBe(200);
    const fetched = site.requests();
    expect(fetched).toBeGreaterThan(0);

    site.files.set('/llms.txt', { status: 200, type: 'text/plain', body: '# Cached\n' });
    const second = await get(app, `/api/trust/${D.cached.toUpperCase()}`);
    expect(second.body).toEqual(first.body);
    expect(site.requests()).toBe(fetched);

    // ownership proven (as verify-ownership records it): shows at once, without a rescan
    const verifiedAt = new Date();
    const until = new Date(verifiedAt.getTime() + 30 * 86_400_000);
    const did = 'did:hedera:local:0.0.1234';
    await sql`insert into domain_challenges (token, domain, did, status, method, proof, verified_at, verified_by, ownership_expires_at, expires_at)
              values (${`tok-${run}`}, ${D.cached}, ${did}, 'verified', 'dns', ${`dns:_agent-passport.${D.cached}`}, ${verifiedAt}, ${did}, ${until}, ${new Date(Date.now() + 86_400_000)})`;
    const third = await get(app, `/api/trust/${D.cached}`);
    expect(third.body.domain_ownership).toEqual({ method: 'dns', verified: true, verified_at: verifiedAt.toISOString(), challenge_token: `tok-${run}`, proof: `dns:_agent-passport.${D.cached}`, verified_by: did, expires_at: until.toISOString() });
    expect(third.body.evidence_root).toEqual(first.body.evidence_root);
    expect(site.requests()).toBe(fetched);
    expect(third.body.integrity.snapshot_hash).not.toBe(first.body.integrity.snapshot_hash);
    const { integrity, ...unsigned } = third.body;
    expect(sha256(canonicalize(unsigned)!)).toBe(integrity.snapshot_hash);
    expect(integrity.key_id).toBe(first.body.integrity.key_id);
  });

  it('concurrent first requests for a domain share one generation: one scan, the same snapshot and hash', async () => {
    // a clock that moves 1 ms per reading, so two separate assemblies could never sign the same generated_at
    let ms = Date.parse('2026-01-01T00:00:00.000Z');
    const tick = () => new Date(ms++);
    for (const ttl of ['3600000', '0']) {
      const service = new TrustSnapshots({ config: testConfig({ ...env(), TRUST_SNAPSHOT_TTL_MS: ttl }), sql, now: tick });
      const before = sites.flight.requests();
      const all = await Promise.all([0, 1, 2, 3, 4].map(() => service.snapshotFor(D.flight)));
      expect(sites.flight.requests() - before, `ttl ${ttl}`).toBe(PROBE_IDS.length);
      for (const snap of all) expect(snap, `ttl ${ttl}`).toEqual(all[0]);
    }
  });

  it('concurrent first requests take one place of the scan quotas for their one scan, not one each; a refused caller does not refuse those who joined it', async () => {
    // no PostgreSQL here: each call's ownership lookup would be a round trip whose replies can come back
    // out of order under load, so which caller starts the generation (and gets the refusal) would be chance
    const service = new TrustSnapshots({ config: testConfig({ ...env(), TRUST_SNAPSHOT_TTL_MS: '0' }) });
    // an admission answers after a PostgreSQL round trip, as the quota's does
    const roundTrip = () => new Promise((r) => setTimeout(r, 20));
    let admitted = 0;
    const admit = async () => {
      await roundTrip();
      admitted++;
    };
    const before = sites.flight.requests();
    // the caller's step stands for both (the site's is a second place of the same kind, after the lookup)
    const admission = (caller: () => Promise<void>) => ({ caller, site: async () => undefined });
    const all = await Promise.all([0, 1, 2, 3, 4].map(() => service.snapshotFor(D.flight, { admitScan: admission(admit) })));
    expect(admitted).toBe(1);
    expect(sites.flight.requests() - before).toBe(PROBE_IDS.length);
    for (const snap of all) expect(snap).toEqual(all[0]);

    // the first caller's quota is full: it gets its refusal; the callers who joined it are admitted under their own, once, for one scan
    const refusal = new Error("the first caller's quota is full");
    let asked = 0;
    const between = sites.flight.requests();
    const results = await Promise.allSettled([
      service.snapshotFor(D.flight, {
        admitScan: admission(async () => {
          asked++;
          await roundTrip();
          throw refusal;
        }),
      }),
      ...[1, 2, 3].map(() =>
        service.snapshotFor(D.flight, {
          admitScan: admission(async () => {
            asked++;
            await roundTrip();
          }),
        }),
      ),
    ]);
    expect(results[0]).toEqual({ status: 'rejected', reason: refusal });
    expect(results.slice(1).map((r) => r.status)).toEqual(['fulfilled', 'fulfilled', 'fulfilled']);
    expect(asked).toBe(2);
    expect(sites.flight.requests() - between).toBe(PROBE_IDS.length);
  });

  it('shows on_chain once the served snapshot_hash has a confirmed attestation (not while it is pending)', async () => {
    const first = await get(app, `/api/trust/${D.chain}`);
    expect(first.status).toBe(200);
    expect(first.body).not.toHaveProperty('on_chain');
    const hash = first.body.integrity.snapshot_hash as string;
    const contract = '0x' + 'ab'.repeat(20);
    await openAttestation(sql, { snapshotHash: hash, domain: D.chain, attestedBy: 'did:hedera:local:0.0.1234', chainId: 31337, contractAddress: contract, snapshot: first.body });
    expect((await get(app, `/api/trust/${D.chain}`)).body).not.toHaveProperty('on_chain');
    const attestedAt = new Date('2026-02-03T04:05:06.000Z');
    await confirmAttestation(sql, hash, { txHash: '0x' + 'cd'.repeat(32), tokenId: 7n, blockNumber: 42n, attestedAt });
    const after = await get(app, `/api/trust/${D.chain}`);
    expect(after.status).toBe(200);
    const { on_chain: onChain, ...rest } = after.body;
    expect(rest).toEqual(first.body);
    expect(onChain).toEqual({
      chain: 'eip155',
      chain_id: 31337,
      contract_address: contract,
      token_id: 7,
      attested_at: attestedAt.toISOString(),
      attested_by: 'did:hedera:local:0.0.1234',
      tx_hash: '0x' + 'cd'.repeat(32),
      revoked: false,
    });
    // the hash still covers the snapshot without integrity and on_chain
    const { integrity, ...unsigned } = rest;
    expect(sha256(canonicalize(unsigned)!)).toBe(integrity.snapshot_hash);
    expect((await get(app, `/api/trust/${D.chain}`)).body).toEqual(after.body);
  });

  it('404 trust_domain_not_found for a domain that does not resolve, or resolves to a private address under the production rule', async () => {
    const missing = `nowhere-${run}.snapshot.test`;
    const r = await get(app, `/api/trust/${missing}`);
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({ code: 'trust_domain_not_found', retryable: false });
    expect(dns.queries(missing)).toBeGreaterThan(0);

    const inside = `inside-${run}.snapshot.test`;
    dns.setA(inside, ['10.1.2.3']);
    const refused = await get(strict, `/api/trust/${inside}`);
    expect(refused.status).toBe(404);
    expect(refused.body.code).toBe('trust_domain_not_found');
    expect(refused.body.error).toMatch(/public address/);
    // one answer for both: the words do not tell a private name from a missing one
    expect(refused.body.error.replace(inside, 'X')).toBe(r.body.error.replace(missing, 'X'));
    expect(refused.body.hint).toBe(r.body.hint);
    dns.setA(inside, ['127.0.0.1']);
    expect((await get(strict, `/api/trust/${inside}`)).status).toBe(404);
  });

  it('uncached scans count against a per-address daily quota (429 with the rate-limit headers); cached snapshots stay free', async () => {
    const names = [0, 1, 2].map((i) => `quota${i}-${run}.perip.test`);
    const site = await startTestSite();
    try {
      for (const n of names) dns.setA(n, ['127.0.0.1']);
      const limited = await buildTestApp(
        { ...env(), TRUST_FETCH_ORIGINS: names.map((n) => `${n}=${site.origin}`).join(','), TRUST_SCANS_DAILY_PER_IP: '2', TRUST_SCANS_HOURLY_PER_SITE: '100000' },
        { sql },
      );
      try {
        const from = (url: string, remoteAddress: string) => limited.inject({ url, remoteAddress });
        const a = `10.${Math.floor(Math.random() * 250)}.7.1`;
        expect((await from(`/api/trust/${names[0]}`, a)).statusCode).toBe(200);
        expect((await from(`/api/trust/${names[1]}`, a)).statusCode).toBe(200);
        const fetched = site.requests();
        const over = await from(`/api/trust/${names[2]}`, a);
        expect(over.statusCode).toBe(429);
        expect(over.json()).toMatchObject({ code: 'trust_quota_exceeded', retryable: true });
        expect(over.json().hint).toContain('cached');
        expect(over.headers['x-ratelimit-limit']).toBe('2');
        expect(over.headers['x-ratelimit-remaining']).toBe('0');
        expect(Number(over.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
        expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
        expect(site.requests()).toBe(fetched); // refused before any fetch
        // a cached snapshot is free, for the same address too
        expect((await from(`/api/trust/${names[0]}`, a)).statusCode).toBe(200);
        expect(site.requests()).toBe(fetched);
        // another address has its own quota
        expect((await from(`/api/trust/${names[2]}`, `10.${Math.floor(Math.random() * 250)}.8.1`)).statusCode).toBe(200);
      } finally {
        await limited.close();
      }
    } finally {
      await site.close();
    }
  });

  it('wildcard subdomains share their registrable domain\'s hourly scan quota, whatever the number of callers', async () => {
    const parent = `wild-${run}.test`;
    const names = Array.from({ length: 6 }, (_, i) => `x${i}.r${i}.${parent}`);
    const site = await startTestSite();
    try {
      for (const n of names) dns.setA(n, ['127.0.0.1']);
      const limited = await buildTestApp(
        { ...env(), TRUST_FETCH_ORIGINS: names.map((n) => `${n}=${site.origin}`).join(','), TRUST_SCANS_DAILY_PER_IP: '100000', TRUST_SCANS_HOURLY_PER_SITE: '3' },
        { sql },
      );
      try {
        const statuses: number[] = [];
        for (const [i, n] of names.entries()) statuses.push((await limited.inject({ url: `/api/trust/${n}`, remoteAddress: `10.9.${i}.${i + 1}` })).statusCode);
        expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
        // at most 3 scans of that site this hour: 3 x one fetch per probe path
        expect(site.requests()).toBe(3 * PROBE_IDS.length);
        // another registrable domain is not affected
        const other = `y-${run}.elsewhere.test`;
        dns.setA(other, ['127.0.0.1']);
        expect((await limited.inject({ url: `/api/trust/${other}`, remoteAddress: '10.9.99.1' })).statusCode).not.toBe(429);
      } finally {
        await limited.close();
      }
    } finally {
      await site.close();
    }
  });

  it("names that do not resolve take no place of their site's hourly quota: made-up subdomains cannot block a real site's scans (issue 26 item 8)", async () => {
    const parent = `resolving-${run}.test`;
    const real = `www.${parent}`;
    const site = await startTestSite();
    try {
      dns.setA(real, ['127.0.0.1']);
      const limited = await buildTestApp(
        { ...env(), TRUST_FETCH_ORIGINS: `${real}=${site.origin}`, TRUST_SCANS_DAILY_PER_IP: '2', TRUST_SCANS_HOURLY_PER_SITE: '2' },
        { sql },
      );
      try {
        // six made-up subdomains of the site, each from its own address: none resolves, none takes a place of the site's 2
        const statuses: number[] = [];
        for (let i = 0; i < 6; i++) statuses.push((await limited.inject({ url: `/api/trust/x${i}.${parent}`, remoteAddress: `10.12.${i}.1` })).statusCode);
        expect(statuses).toEqual([404, 404, 404, 404, 404, 404]);
        // the real site is scanned (once, 12 fetches)
        const r = await limited.inject({ url: `/api/trust/${real}`, remoteAddress: '10.12.99.1' });
        expect(r.statusCode, r.body).toBe(200);
        expect(site.requests()).toBe(PROBE_IDS.length);
        // a lookup is still the caller's to pay: names that do not resolve count against the address's own daily quota,
        // and a refused caller's next name is not even looked up
        const from = '10.12.100.1';
        expect((await limited.inject({ url: `/api/trust/y0.${parent}`, remoteAddress: from })).statusCode).toBe(404);
        expect((await limited.inject({ url: `/api/trust/y1.${parent}`, remoteAddress: from })).statusCode).toBe(404);
        const over = await limited.inject({ url: `/api/trust/y2.${parent}`, remoteAddress: from });
        expect([over.statusCode, over.json().code]).toEqual([429, 'trust_quota_exceeded']);
        expect(dns.queries(`y2.${parent}`)).toBe(0);
      } finally {
        await limited.close();
      }
    } finally {
      await site.close();
    }
  });

  it('400 trust_domain_invalid for IP literals in every form, ports and non-domains', async () => {
    for (const bad of ['127.0.0.1', '169.254.169.254', '2852039166', '0xA9FEA9FE', '0251.0376.0251.0376', '[::1]', '[::ffff:169.254.169.254]', `${D.verify}:443`, 'localhost', 'a_b.example', `${'a'.repeat(64)}.example`]) {
      const r = await get(app, `/api/trust/${encodeURIComponent(bad)}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.code, bad).toBe('trust_domain_invalid');
    }
    // longer than the router's 100-character path parameter cap (issue 8): 400 before the route
    const long = await get(app, `/api/trust/${'a.'.repeat(127)}example`);
    expect(long.status).toBe(400);
    expect(long.body.code).toBe('invalid_request');
  });

  it('/rules, /rules/{id} and /rules/{id}.json render the same catalog; unknown ids answer 404', async () => {
    const catalog = (await get(app, '/rules.json')).body;
    const page = await app.inject({ method: 'GET', url: '/rules' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    for (const rule of catalog.rules as Json[]) {
      expect(page.body).toContain(`id="${rule.id}"`);
      const one = await get(app, `/rules/${rule.id}.json`);
      expect(one.status).toBe(200);
      expect(one.body).toEqual(rule);
      const html = await app.inject({ method: 'GET', url: `/rules/${rule.id}` });
      expect(html.statusCode).toBe(200);
      expect(html.headers['content-type']).toMatch(/^text\/html/);
    }
    expect(page.body).toContain('How to verify a snapshot');
    expect(page.body).toContain(catalog.profile_hash);
    for (const url of ['/rules/AR-999', '/rules/AR-999.json', '/rules/ar-001.json', '/rules/%3Cscript%3E']) {
      const r = await get(app, url);
      expect(r.status, url).toBe(404);
      expect(r.body.code).toBe('trust_rule_not_found');
    }
  });
});
