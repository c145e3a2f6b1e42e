// Domain ownership challenges end to end over HTTP: the API, PostgreSQL, a localnet (the DIDs whose
// keys sign verify-ownership), the Temporal dev server (to show that no workflow is started), a DNS
// server on a loopback port (TRUST_DNS_SERVERS) for the TXT and A records and loopback HTTP servers
// for the domains' well-known files (TRUST_ALLOW_PRIVATE with TRUST_FETCH_ORIGINS).
// Issue 20 item 1: an anonymous challenge starts no work (no workflow, no fetch, no DNS query at
// all), within a per-address daily quota; the resolution and public-address rules apply when the
// signed owner verifies, within a per-DID and per-address quota; old rows are swept. Issue 19 item
// 8: only same-host redirects count for the well-known file, a proof names its DID (a token copied
// from a record or file proves nothing for another DID, whether the challenge was issued for a DID
// or without one) and expires, renewed by the same flow. SPEC 4.5: GET .../challenge needs no input.
import { Resolver } from 'node:dns/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { WorkflowNotFoundError } from '@temporalio/client';
import { createSql, type Sql } from '../../db/client.js';
import { findDomainOwnership } from '../../db/queries/domainOwnership.js';
import { sha256Base64url } from '../../domain/hash.js';
import { domainOwnershipWorkflowId } from '../../workflows/contracts/domainOwnership.js';
import { buildTestApp } from '../support/app.js';
import { connectTestTemporal, type TestTemporal } from '../support/temporal.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { startTestDns, type TestDnsServer } from '../support/testDns.js';
import { startTestSite, type TestSite as Site } from '../support/testSite.js';
import { inject } from 'vitest';

type Json = Record<string, any>;

const WELL_KNOWN = '/.well-known/agent-passport-challenge.txt';
const run = Math.random().toString(36).slice(2, 8);
/** Test domains (unique per run: the database and the Temporal namespace are shared by the run's files). */
const D = {
  dns: `dns-${run}.ownership.test`,
  web: `web-${run}.ownership.test`,
  hop: `hop-${run}.ownership.test`,
  evil: `evil-${run}.ownership.test`,
  wrong: `wrong-${run}.ownership.test`,
  expiry: `expiry-${run}.ownership.test`,
  renew: `renew-${run}.ownership.test`,
  quota: `quota-${run}.ownership.test`,
  snap: `snap-${run}.ownership.test`,
  open: `open-${run}.ownership.test`,
  copy: `copy-${run}.ownership.test`,
};
/** a distinct client address per test run (the quotas are per address) */
const ip = (n: number) => `10.${Math.floor(Math.random() * 200)}.${n % 250}.${Math.floor(Math.random() * 250) + 1}`;

describe('domain ownership challenges (DNS server, loopback sites, localnet DIDs, PostgreSQL)', () => {
  let dns: TestDnsServer;
  let sites: Record<keyof typeof D, Site>;
  let ledger: LedgerStack;
  let sql: Sql;
  let t: TestTemporal;
  let app: FastifyInstance;
  let owner: TestAgent;
  let stranger: TestAgent;
  let third: TestAgent;
  /** DIDs of the tests added for challenges without a DID (the per-DID quotas are kept in PostgreSQL, shared by every test) */
  let fourth: TestAgent;
  let fifth: TestAgent;

  const env = (extra: Record<string, string> = {}) => ({
    ...ledger.env,
    TRUST_ALLOW_PRIVATE: 'true',
    TRUST_DNS_SERVERS: dns.address,
    TRUST_FETCH_ORIGINS: Object.entries(D).map(([k, d]) => `${d}=${sites[k as keyof typeof D].origin}`).join(','),
    TEMPORAL_TASK_QUEUE: t.taskQueue,
    RATE_LIMIT_MAX: '100000',
    TRUST_VERIFY_DAILY_PER_DID: '1000',
    TRUST_VERIFY_DAILY_PER_IP: '1000',
    TRUST_CHALLENGES_DAILY_PER_IP: '1000',
    ...extra,
  });
  const build = (extra: Record<string, string> = {}) => buildTestApp(env(extra), { sql, ledger: ledger.ledger, temporal: async () => t.client });

  const challenge = async (domain: string, did: string | undefined, a = app, remoteAddress = '127.0.0.1') => {
    const res = await a.inject({ method: 'GET', url: `/api/trust/${domain}/challenge${did === undefined ? '' : `?did=${encodeURIComponent(did)}`}`, remoteAddress });
    return { status: res.statusCode, body: res.json() as Json, headers: res.headers };
  };
  const verify = async (domain: string, agent: TestAgent | null, body: Json, a = app, remoteAddress = '127.0.0.1') => {
    const headers = agent ? await signedHeaders(a, agent) : {};
    const res = await a.inject({ method: 'POST', url: `/api/trust/${domain}/verify-ownership`, headers: { 'content-type': 'application/json', ...headers }, payload: JSON.stringify(body), remoteAddress });
    return { status: res.statusCode, body: res.json() as Json, headers: res.headers };
  };
  /** What anyone can read of a domain's challenge: the TXT record's value and the well-known file's first line, after `agent-passport-verification=`. */
  const readPublished = async (domain: string): Promise<string[]> => {
    const resolver = new Resolver();
    resolver.setServers([dns.address]);
    const txt = (await resolver.resolveTxt(`_agent-passport.${domain}`)).map((chunks) => chunks.join(''));
    const file = (await (await fetch(`${sites[(Object.keys(D) as (keyof typeof D)[]).find((k) => D[k] === domain)!].origin}${WELL_KNOWN}`)).text()).split('\n')[0]!;
    return [...txt, file].map((v) => v.replace(/^agent-passport-verification=/, ''));
  };
  const noWorkflow = async (domain: string, token: string) => {
    const err = await t.client.workflow
      .getHandle(domainOwnershipWorkflowId(domain, token))
      .describe()
      .then(() => null, (e: unknown) => e);
    expect(err, `a domainOwnership workflow was started for ${domain}`).toBeInstanceOf(WorkflowNotFoundError);
  };

  beforeAll(async () => {
    dns = await startTestDns();
    sites = Object.fromEntries(await Promise.all(Object.keys(D).map(async (k) => [k, await startTestSite()]))) as Record<keyof typeof D, Site>;
    for (const d of Object.values(D)) dns.setA(d, ['127.0.0.1']);
    ledger = await startLedgerStack('trust-own');
    [owner, stranger, third, fourth, fifth] = ledger.localnet.config.accounts as unknown as [TestAgent, TestAgent, TestAgent, TestAgent, TestAgent];
    sql = createSql(inject('databaseUrl'), { max: 4 });
    t = await connectTestTemporal('trust-own');
    app = await build();
  }, 180_000);

  afterAll(async () => {
    await app?.close();
    await t?.close();
    await sql?.end();
    await ledger?.stop();
    await dns?.close();
    for (const s of Object.values(sites ?? {})) await s.close();
  });

  it('hands out a challenge for a DID: token, TXT record, well-known URL, 24 h; the same one again; and starts no work (no workflow, no fetch, no TXT query)', async () => {
    const before = Date.now();
    const r = await challenge(D.dns, owner.did);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.body.did).toBe(owner.did);
    expect(r.body.dns_record).toBe(`_agent-passport.${D.dns}. TXT "agent-passport-verification=${r.body.token}"`);
    expect(r.body.well_known_url).toBe(`https://${D.dns}${WELL_KNOWN}`);
    expect(r.body.well_known_content).toBe(`agent-passport-verification=${r.body.token}`);
    const expires = Date.parse(r.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 1_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3600_000 + 1_000);
    expect(r.body._links.verify).toEqual({ href: `/api/trust/${D.dns}/verify-ownership`, method: 'POST' });
    // the domain is normalised: another spelling gets the same open challenge; another DID its own
    const again = await challenge(`${D.dns.toUpperCase()}.`, owner.did);
    expect(again.body.token).toBe(r.body.token);
    const other = await challenge(D.dns, stranger.did);
    expect(other.status).toBe(200);
    expect(other.body.token).not.toBe(r.body.token);

    await noWorkflow(D.dns, r.body.token);
    await noWorkflow(D.dns, other.body.token);
    expect(dns.queries(`_agent-passport.${D.dns}`)).toBe(0);
    expect(dns.queries(D.dns)).toBe(0); // not even an A lookup
    expect(sites.dns.requests()).toBe(0);
  });

  it('SPEC 4.5: GET .../challenge with no input answers 200 with token, dns_record, well_known_url, expires_at; the record and the file carry the digest of the token, not the token', async () => {
    const before = Date.now();
    const r = await challenge(D.open, undefined);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    for (const field of ['token', 'dns_record', 'well_known_url', 'expires_at']) expect(typeof r.body[field], field).toBe('string');
    expect(r.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.body.did).toBeUndefined();
    const digest = sha256Base64url(r.body.token);
    expect(r.body.dns_record).toBe(`_agent-passport.${D.open}. TXT "agent-passport-verification=${digest}"`);
    expect(r.body.well_known_url).toBe(`https://${D.open}${WELL_KNOWN}`);
    expect(r.body.well_known_content).toBe(`agent-passport-verification=${digest}`);
    expect(r.body.dns_record).not.toContain(r.body.token);
    expect(r.body.well_known_content).not.toContain(r.body.token);
    expect(Date.parse(r.body.expires_at)).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 1_000);
    // never handed out again: each anonymous requester gets its own token
    const again = await challenge(D.open, undefined);
    expect(again.status).toBe(200);
    expect(again.body.token).not.toBe(r.body.token);
    await noWorkflow(D.open, r.body.token);
    expect(dns.queries(D.open)).toBe(0);
    expect(dns.queries(`_agent-passport.${D.open}`)).toBe(0);
    expect(sites.open.requests()).toBe(0);
  });

  it('a challenge issued without a DID is claimed by the DID that presents its token: the proof names it, the token never shows', async () => {
    const { body: ch } = await challenge(D.open, undefined);
    const digest = sha256Base64url(ch.token);
    // publishing the token itself does not count (it would give the challenge away)
    dns.setTxt(`_agent-passport.${D.open}`, [`agent-passport-verification=${ch.token}`]);
    const wrong = await verify(D.open, owner, { did: owner.did, token: ch.token });
    expect(wrong.status).toBe(403);
    expect(wrong.body.code).toBe('trust_ownership_not_proven');
    expect(wrong.body.hint).toContain(ch.dns_record);
    dns.setTxt(`_agent-passport.${D.open}`, [`agent-passport-verification=${digest}`]);
    const ok = await verify(D.open, owner, { did: owner.did, token: ch.token });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body.domain_ownership).toMatchObject({ method: 'dns', verified: true, verified_by: owner.did, challenge_token: digest });
    expect(ok.body.domain_ownership.proof).toContain(digest);
    expect(JSON.stringify(ok.body)).not.toContain(ch.token);
    const snapshot = (await app.inject({ url: `/api/trust/${D.open}` })).json() as Json;
    expect(snapshot.domain_ownership).toMatchObject({ verified: true, verified_by: owner.did, challenge_token: digest });
    expect(JSON.stringify(snapshot)).not.toContain(ch.token);
    // claimed: another DID holding the token gets nothing
    const late = await verify(D.open, stranger, { did: stranger.did, token: ch.token });
    expect(late.status).toBe(404);
    expect(late.body.code).toBe('trust_challenge_not_found');
  });

  it('copy attack: a DID that read the record or the file of a challenge (issued for a DID or without one) cannot claim it', async () => {
    // issued for the owner: the record carries the token, the stranger copies it from DNS or the file
    const { body: bound } = await challenge(D.copy, owner.did);
    dns.setTxt(`_agent-passport.${D.copy}`, [`agent-passport-verification=${bound.token}`]);
    sites.copy.files.set(WELL_KNOWN, `${bound.well_known_content}\n`);
    const read = await readPublished(D.copy);
    expect(read).toEqual([bound.token, bound.token]);
    for (const token of read) {
      const copied = await verify(D.copy, stranger, { did: stranger.did, token });
      expect(copied.status).toBe(404);
      expect(copied.body.code).toBe('trust_challenge_not_found');
    }
    expect(await findDomainOwnership(sql, D.copy)).toBeNull();

    // issued without a DID: the record and the file carry the digest; presenting it (or anything read there) claims nothing
    const { body: open } = await challenge(D.copy, undefined);
    const digest = sha256Base64url(open.token);
    dns.setTxt(`_agent-passport.${D.copy}`, [`agent-passport-verification=${digest}`]);
    sites.copy.files.set(WELL_KNOWN, `${open.well_known_content}\n`);
    const seen = await readPublished(D.copy);
    expect(seen).toEqual([digest, digest]);
    for (const token of seen) {
      const copied = await verify(D.copy, stranger, { did: stranger.did, token });
      expect(copied.status, token).toBe(404);
      expect(copied.body.code).toBe('trust_challenge_not_found');
    }
    expect(await findDomainOwnership(sql, D.copy)).toBeNull();
    // the requester, holding the token, proves it with its DID
    const mine = await verify(D.copy, fourth, { did: fourth.did, token: open.token });
    expect(mine.status, JSON.stringify(mine.body)).toBe(200);
    expect(mine.body.domain_ownership.verified_by).toBe(fourth.did);
    expect(await findDomainOwnership(sql, D.copy)).toMatchObject({ verified: true, verified_by: fourth.did });
  });

  it('two DIDs presenting the token of one challenge issued without a DID at once: exactly one claims it', async () => {
    const { body: ch } = await challenge(D.open, undefined);
    const [a, b] = await Promise.all([verify(D.open, fourth, { did: fourth.did, token: ch.token }), verify(D.open, fifth, { did: fifth.did, token: ch.token })]);
    expect([a.status, b.status].filter((s) => s === 404)).toHaveLength(1);
    const [row] = await sql<{ did: string }[]>`select did from domain_challenges where token = ${ch.token}`;
    expect(row!.did).toBe(a.status === 404 ? fifth.did : fourth.did);
    expect((a.status === 404 ? b : a).status).not.toBe(404);
  });

  it('an anonymous flood of challenges from many addresses starts no workflow, looks nothing up and fetches nothing', async () => {
    // the names are in no DNS (this machine has no internet either): issuing needs no resolution
    const names = Array.from({ length: 30 }, (_, i) => `n${i}-${run}.flood.test`);
    const answers = await Promise.all(names.map((n, i) => challenge(n, i % 2 ? third.did : undefined, app, ip(i))));
    for (const a of answers) expect(a.status, JSON.stringify(a.body)).toBe(200);
    for (const [i, n] of names.entries()) {
      await noWorkflow(n, answers[i]!.body.token);
      expect(dns.queries(n)).toBe(0);
      expect(dns.queries(`_agent-passport.${n}`)).toBe(0);
    }
  });

  it('30 anonymous challenges for 30 names from one address: no workflow, no lookup, at most TRUST_CHALLENGES_DAILY_PER_IP rows (429 after)', async () => {
    const limited = await build({ TRUST_CHALLENGES_DAILY_PER_IP: '10' });
    try {
      const addr = ip(4);
      const names = Array.from({ length: 30 }, (_, i) => `q${i}-${run}.flood.test`);
      const answers: Awaited<ReturnType<typeof challenge>>[] = [];
      for (const n of names) answers.push(await challenge(n, undefined, limited, addr));
      expect(answers.filter((a) => a.status === 200)).toHaveLength(10);
      const refused = answers.filter((a) => a.status !== 200);
      expect(refused).toHaveLength(20);
      for (const r of refused) {
        expect(r.status).toBe(429);
        expect(r.body.code).toBe('trust_quota_exceeded');
      }
      const rows = await sql`select 1 from domain_challenges where domain in ${sql(names)}`;
      expect(rows).toHaveLength(10);
      for (const [i, n] of names.entries()) {
        if (answers[i]!.status === 200) await noWorkflow(n, answers[i]!.body.token);
        expect(dns.queries(n)).toBe(0);
      }
    } finally {
      await limited.close();
    }
  });

  it('refuses what is not a domain (400) and a foreign DID (400); a name that does not resolve gets its challenge, and the check refuses it (404, one message for missing and private, no TXT query)', async () => {
    for (const bad of ['127.0.0.1', '2852039166', '0xA9FEA9FE', '[::1]', `${D.dns}:443`, 'localhost']) {
      for (const did of [owner.did, undefined]) {
        const r = await challenge(encodeURIComponent(bad), did);
        expect(r.status, bad).toBe(400);
        expect(r.body.code, bad).toBe('trust_domain_invalid');
      }
    }
    const foreign = await challenge(D.dns, 'did:hedera:mainnet:0.0.98');
    expect(foreign.status).toBe(400);
    expect(foreign.body.code).toBe('invalid_request');

    const missing = `nowhere-${run}.ownership.test`;
    const inside = `inside-${run}.ownership.test`;
    dns.setA(inside, ['10.1.2.3']);
    const strict = await buildTestApp(
      { ...ledger.env, TRUST_DNS_SERVERS: dns.address, RATE_LIMIT_MAX: '100000', TRUST_VERIFY_DAILY_PER_DID: '1000', TRUST_VERIFY_DAILY_PER_IP: '1000', TRUST_CHALLENGES_DAILY_PER_IP: '1000' },
      { sql, ledger: ledger.ledger, temporal: async () => t.client },
    );
    try {
      const refusals: Json[] = [];
      for (const [name, did] of [[missing, owner.did], [inside, undefined]] as const) {
        const ch = await challenge(name, did, strict);
        expect(ch.status, JSON.stringify(ch.body)).toBe(200);
        expect(dns.queries(name)).toBe(0);
        const v = await verify(name, owner, { did: owner.did, token: ch.body.token }, strict);
        expect(v.status, JSON.stringify(v.body)).toBe(404);
        expect(v.body.code).toBe('trust_domain_not_found');
        expect(dns.queries(`_agent-passport.${name}`)).toBe(0);
        refusals.push({ error: v.body.error.replace(name, 'X'), hint: v.body.hint });
      }
      // the same words for both: the answer does not tell an internal name from a missing one
      expect(refusals[0]).toEqual(refusals[1]);
    } finally {
      await strict.close();
    }
  });

  it('new challenges count against a per-address daily quota; an open one is handed out again without counting', async () => {
    const limited = await build({ TRUST_CHALLENGES_DAILY_PER_IP: '2' });
    try {
      const addr = ip(3);
      const first = await challenge(D.quota, owner.did, limited, addr);
      expect(first.status).toBe(200);
      expect((await challenge(D.quota, stranger.did, limited, addr)).status).toBe(200);
      const over = await challenge(D.quota, third.did, limited, addr);
      expect(over.status).toBe(429);
      expect(over.body.code).toBe('trust_quota_exceeded');
      expect(over.headers['x-ratelimit-limit']).toBe('2');
      const again = await challenge(D.quota, owner.did, limited, addr);
      expect(again.status).toBe(200);
      expect(again.body.token).toBe(first.body.token);
    } finally {
      await limited.close();
    }
  });

  it('proves ownership by the DNS TXT record, signed by the DID: 401 unsigned, 403 before publishing, 200 after; the proof names the DID and expires in 30 days', async () => {
    const { body: ch } = await challenge(D.dns, owner.did);
    const unsigned = await verify(D.dns, null, { did: owner.did, token: ch.token });
    expect(unsigned.status).toBe(401);
    expect(unsigned.body.code).toBe('auth_header_missing');
    const before = await verify(D.dns, owner, { did: owner.did, token: ch.token });
    expect(before.status).toBe(403);
    expect(before.body.code).toBe('trust_ownership_not_proven');
    expect(before.body.error).toContain('no TXT record');
    expect(before.body.hint).toContain(ch.dns_record);

    dns.setTxt(`_agent-passport.${D.dns}`, ['v=spf1 -all', `agent-passport-verification=${ch.token}`]);
    const after = await verify(D.dns, owner, { did: owner.did, token: ch.token });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body).toMatchObject({ domain: D.dns, verified: true });
    expect(after.body.domain_ownership).toMatchObject({ method: 'dns', verified: true, challenge_token: ch.token, verified_by: owner.did });
    expect(after.body.domain_ownership.proof).toContain(`agent-passport-verification=${ch.token}`);
    const verifiedAt = Date.parse(after.body.domain_ownership.verified_at);
    expect(Date.parse(after.body.domain_ownership.expires_at) - verifiedAt).toBe(30 * 86_400_000);

    // the record may go away, the proof stays until it expires
    dns.clear(`_agent-passport.${D.dns}`);
    dns.setA(D.dns, ['127.0.0.1']);
    const again = await verify(D.dns, owner, { did: owner.did, token: ch.token });
    expect(again.status).toBe(200);
    expect(again.body.domain_ownership).toEqual(after.body.domain_ownership);
    expect(await findDomainOwnership(sql, D.dns)).toEqual(after.body.domain_ownership);
  });

  it("a token copied from the owner's published record proves nothing for another DID", async () => {
    const { body: ch } = await challenge(D.wrong, owner.did);
    dns.setTxt(`_agent-passport.${D.wrong}`, [`agent-passport-verification=${ch.token}`]);
    const copied = await verify(D.wrong, stranger, { did: stranger.did, token: ch.token });
    expect(copied.status).toBe(404);
    expect(copied.body.code).toBe('trust_challenge_not_found');
    // naming the owner while signed in as someone else: refused by the signature guard
    const posing = await app.inject({ method: 'POST', url: `/api/trust/${D.wrong}/verify-ownership`, headers: { 'content-type': 'application/json', ...(await signedHeaders(app, stranger)) }, payload: JSON.stringify({ did: owner.did, token: ch.token }) });
    expect(posing.statusCode).toBe(403);
    expect(posing.json().code).toBe('auth_did_mismatch');
    expect(await findDomainOwnership(sql, D.wrong)).toBeNull();
    // the owner still proves it
    const mine = await verify(D.wrong, owner, { did: owner.did, token: ch.token });
    expect(mine.status).toBe(200);
    expect(mine.body.domain_ownership.verified_by).toBe(owner.did);
  });

  it('proves ownership by the well-known file; a redirect to another host holding the token does not count, one on the same host does', async () => {
    const { body: ch } = await challenge(D.web, owner.did);
    const before = await verify(D.web, owner, { did: owner.did, token: ch.token });
    expect(before.status).toBe(403);
    expect(before.body.error).toContain('HTTP 404');

    // another host (resolved by the test DNS to the evil site) serves the token; web redirects there
    const evilPort = new URL(sites.evil.origin).port;
    sites.evil.files.set(WELL_KNOWN, `${ch.token}\n`);
    sites.web.files.set(WELL_KNOWN, { status: 302, type: 'text/plain', body: '', headers: { location: `http://${D.evil}:${evilPort}${WELL_KNOWN}` } });
    const hop = await verify(D.web, owner, { did: owner.did, token: ch.token });
    expect(hop.status, JSON.stringify(hop.body)).toBe(403);
    expect(hop.body.error).toContain('redirect_refused');
    expect(sites.evil.requests()).toBe(0);

    // a redirect on the same host is followed
    sites.web.files.set(WELL_KNOWN, { status: 301, type: 'text/plain', body: '', headers: { location: '/proof.txt' } });
    sites.web.files.set('/proof.txt', `${ch.token}\n`);
    const after = await verify(D.web, owner, { did: owner.did, token: ch.token });
    expect(after.status, JSON.stringify(after.body)).toBe(200);
    expect(after.body.domain_ownership).toMatchObject({ method: 'well-known', verified: true, challenge_token: ch.token, verified_by: owner.did });
    expect(after.body.domain_ownership.proof).toContain(`https://${D.web}${WELL_KNOWN}`);
  });

  it('does not take a wrong token for proof (403), answers 404 for a token the domain never had, 400 for a bad body', async () => {
    const { body: ch } = await challenge(D.hop, owner.did);
    const { body: other } = await challenge(D.web, third.did);
    dns.setTxt(`_agent-passport.${D.hop}`, [`agent-passport-verification=${other.token}`]);
    sites.hop.files.set(WELL_KNOWN, 'agent-passport-verification=not-the-token\n');
    const r = await verify(D.hop, owner, { did: owner.did, token: ch.token });
    expect(r.status).toBe(403);
    expect(r.body.error).toContain('none with the token');
    expect(r.body.error).toContain('does not hold the token');
    for (const token of [other.token, 'A'.repeat(43), 'short']) {
      const n = await verify(D.hop, owner, { did: owner.did, token });
      expect(n.status, token).toBe(404);
      expect(n.body.code).toBe('trust_challenge_not_found');
    }
    expect((await verify(D.hop, owner, { did: owner.did, token: ch.token, extra: 1 })).status).toBe(400);
    expect((await verify(D.hop, owner, { did: owner.did })).status).toBe(400);
  });

  it('a challenge expires (400); a proof expires (snapshot and attest stop counting it) and the same flow renews it', async () => {
    const shortChallenge = await build({ TRUST_CHALLENGE_TTL_MS: '1500' });
    const shortProof = await build({ TRUST_OWNERSHIP_TTL_MS: '1500' });
    try {
      const { body: ch } = await challenge(D.expiry, owner.did, shortChallenge);
      dns.setTxt(`_agent-passport.${D.expiry}`, [`agent-passport-verification=${ch.token}`]);
      await new Promise((r) => setTimeout(r, Math.max(0, Date.parse(ch.expires_at) - Date.now() + 50)));
      const late = await verify(D.expiry, owner, { did: owner.did, token: ch.token });
      expect(late.status).toBe(400);
      expect(late.body.code).toBe('trust_challenge_expired');
      expect(await findDomainOwnership(sql, D.expiry)).toBeNull();

      const { body: first } = await challenge(D.renew, owner.did, shortProof);
      dns.setTxt(`_agent-passport.${D.renew}`, [`agent-passport-verification=${first.token}`]);
      const proven = await verify(D.renew, owner, { did: owner.did, token: first.token }, shortProof);
      expect(proven.status).toBe(200);
      const until = Date.parse(proven.body.domain_ownership.expires_at);
      await new Promise((r) => setTimeout(r, Math.max(0, until - Date.now() + 50)));
      expect(await findDomainOwnership(sql, D.renew)).toBeNull();
      const stale = await verify(D.renew, owner, { did: owner.did, token: first.token }, shortProof);
      expect(stale.status).toBe(400);
      expect(stale.body.code).toBe('trust_challenge_expired');
      expect(stale.body.hint).toContain('Renew');
      // renewal: a new challenge, published, verified
      const { body: next } = await challenge(D.renew, owner.did, app);
      expect(next.token).not.toBe(first.token);
      dns.setTxt(`_agent-passport.${D.renew}`, [`agent-passport-verification=${next.token}`]);
      const renewed = await verify(D.renew, owner, { did: owner.did, token: next.token });
      expect(renewed.status).toBe(200);
      expect(await findDomainOwnership(sql, D.renew)).toMatchObject({ verified: true, challenge_token: next.token, verified_by: owner.did });
    } finally {
      await shortChallenge.close();
      await shortProof.close();
    }
  });

  it('checks count against a per-DID and a per-address daily quota: 429 with the rate-limit headers; a proof already made answers without a check', async () => {
    const limited = await build({ TRUST_VERIFY_DAILY_PER_DID: '2', TRUST_VERIFY_DAILY_PER_IP: '3' });
    try {
      const addr = ip(1);
      const { body: ch } = await challenge(D.quota, third.did, limited, addr);
      for (let i = 0; i < 2; i++) expect((await verify(D.quota, third, { did: third.did, token: ch.token }, limited, addr)).status).toBe(403);
      const before = dns.queries(`_agent-passport.${D.quota}`);
      const over = await verify(D.quota, third, { did: third.did, token: ch.token }, limited, addr);
      expect(over.status).toBe(429);
      expect(over.body).toMatchObject({ code: 'trust_quota_exceeded', retryable: true });
      expect(over.body.hint).toMatch(/Retry in/);
      expect(over.headers['x-ratelimit-limit']).toBe('2');
      expect(over.headers['x-ratelimit-remaining']).toBe('0');
      expect(Number(over.headers['x-ratelimit-reset'])).toBeGreaterThan(Date.now() / 1000);
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      expect(dns.queries(`_agent-passport.${D.quota}`)).toBe(before); // refused before any check

      // another DID from the same address: one more check, then the address's quota is used up
      const { body: ch2 } = await challenge(D.quota, stranger.did, limited, addr);
      expect((await verify(D.quota, stranger, { did: stranger.did, token: ch2.token }, limited, addr)).status).toBe(403);
      const addrOver = await verify(D.quota, stranger, { did: stranger.did, token: ch2.token }, limited, addr);
      expect(addrOver.status).toBe(429);
      expect(addrOver.headers['x-ratelimit-limit']).toBe('3');
      // a refused request took no place: the DID's own quota is as it was (1 of 2 used)
      // from another address the DID still has places
      dns.setTxt(`_agent-passport.${D.quota}`, [`agent-passport-verification=${ch2.token}`]);
      const ok = await verify(D.quota, stranger, { did: stranger.did, token: ch2.token }, limited, ip(2));
      expect(ok.status).toBe(200);
      // a proof already made is answered without a check, quota or not
      expect((await verify(D.quota, stranger, { did: stranger.did, token: ch2.token }, limited, addr)).status).toBe(200);
    } finally {
      await limited.close();
    }
  });

  it('sweeps old challenge rows when a challenge is written', async () => {
    const old = new Date(Date.now() - 3 * 86_400_000);
    const stale = [`stale-a-${run}`, `stale-b-${run}`];
    await sql`insert into domain_challenges (token, domain, did, expires_at, created_at) values (${stale[0]!}, ${`old-${run}.ownership.test`}, ${owner.did}, ${old}, ${old})`;
    await sql`insert into domain_challenges (token, domain, did, status, method, proof, verified_at, verified_by, ownership_expires_at, expires_at, created_at)
              values (${stale[1]!}, ${`old-${run}.ownership.test`}, ${owner.did}, 'verified', 'dns', 'x', ${old}, ${owner.did}, ${new Date(old.getTime() + 3_600_000)}, ${old}, ${old})`;
    expect((await challenge(D.snap, third.did)).status).toBe(200);
    const left = await sql`select token from domain_challenges where token in ${sql(stale)}`;
    expect(left).toHaveLength(0);
  });

  it('a proven ownership shows in later snapshots (GET /api/trust/{domain}); a pending challenge does not change the snapshot', async () => {
    const first = await app.inject({ url: `/api/trust/${D.snap}` });
    expect(first.statusCode).toBe(200);
    expect(first.json().domain_ownership).toMatchObject({ verified: false, method: 'none' });
    const { body: ch } = await challenge(D.snap, owner.did);
    expect((await app.inject({ url: `/api/trust/${D.snap}` })).json().domain_ownership).toEqual(first.json().domain_ownership);
    sites.snap.files.set(WELL_KNOWN, ch.token);
    expect((await verify(D.snap, owner, { did: owner.did, token: ch.token })).status).toBe(200);
    const later = (await app.inject({ url: `/api/trust/${D.snap}` })).json() as Json;
    expect(later.domain_ownership).toMatchObject({ method: 'well-known', verified: true, challenge_token: ch.token, verified_by: owner.did });
    expect(later.integrity.snapshot_hash).not.toBe(first.json().integrity.snapshot_hash);
  });
});
