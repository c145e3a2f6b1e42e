// Domain ownership challenges end to end over HTTP: the API, the domainOwnership workflow on the
// Temporal dev server, PostgreSQL, a DNS server on a loopback port (TRUST_DNS_SERVERS) for the TXT
// records and loopback HTTP servers for the domains' well-known files (TRUST_ALLOW_PRIVATE with
// TRUST_FETCH_ORIGINS). Ownership proven by DNS and by the well-known file, wrong and unknown
// tokens, the workflow proving on its own between two checkNow calls, expiry, and the proof in a
// later snapshot.
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Worker } from '@temporalio/worker';
import { createSql, type Sql } from '../../db/client.js';
import { createActivities } from '../../activities/index.js';
import { findDomainOwnership } from '../../db/queries/domainOwnership.js';
import { domainOwnershipWorkflowId } from '../../workflows/domainOwnership.js';
import type { OwnershipCheckResult } from '../../activities/web/domainOwnership.js';
import { buildTestApp, testConfig } from '../support/app.js';
import { connectTestTemporal, recordHistory, type TestTemporal } from '../support/temporal.js';
import { startTestDns, type TestDnsServer } from '../support/testDns.js';
import { startTestSite, type TestSite as Site } from '../support/testSite.js';
import { historiesDir, workflowsPath } from './passportHarness.js';

type Json = Record<string, any>;

const WELL_KNOWN = '/.well-known/agent-passport-challenge.txt';
const run = Math.random().toString(36).slice(2, 8);
/** Test domains (unique per run: the database and the Temporal namespace are shared by the run's files). */
const D = {
  dns: `dns-${run}.ownership.test`,
  web: `web-${run}.ownership.test`,
  wrong: `wrong-${run}.ownership.test`,
  poll: `poll-${run}.ownership.test`,
  expiry: `expiry-${run}.ownership.test`,
  snap: `snap-${run}.ownership.test`,
};

describe('domain ownership challenges (DNS server, loopback sites, Temporal, PostgreSQL)', () => {
  let dns: TestDnsServer;
  let sites: Record<keyof typeof D, Site>;
  let sql: Sql;
  let t: TestTemporal;
  let worker: Worker;
  let running: Promise<void>;
  let app: FastifyInstance;
  let shortApp: FastifyInstance;

  const env = () => ({
    TRUST_ALLOW_PRIVATE: 'true',
    TRUST_DNS_SERVERS: dns.address,
    TRUST_FETCH_ORIGINS: Object.entries(D).map(([k, d]) => `${d}=${sites[k as keyof typeof D].origin}`).join(','),
    TRUST_OWNERSHIP_POLL_MS: '300',
    TEMPORAL_TASK_QUEUE: t.taskQueue,
    RATE_LIMIT_MAX: '100000',
  });

  /** workflow ids of the challenges handed out, so the ones still open are ended with the file */
  const started = new Set<string>();
  const get = async (a: FastifyInstance, url: string) => {
    const res = await a.inject({ method: 'GET', url });
    const body = res.json() as Json;
    const m = /^\/api\/trust\/([^/]+)\/challenge$/.exec(url);
    if (res.statusCode === 200 && m) started.add(domainOwnershipWorkflowId(decodeURIComponent(m[1]!).toLowerCase().replace(/\.$/, ''), body.token));
    return { status: res.statusCode, body };
  };
  const verify = async (domain: string, body: unknown, a = app) => {
    const res = await a.inject({ method: 'POST', url: `/api/trust/${domain}/verify-ownership`, payload: body as object });
    return { status: res.statusCode, body: res.json() as Json };
  };
  const result = (domain: string, token: string) => t.client.workflow.getHandle(domainOwnershipWorkflowId(domain, token)).result() as Promise<OwnershipCheckResult>;
  const record = async (domain: string, token: string, name: string) => {
    const file = path.join(historiesDir, `${name}.history.bin`);
    if (fs.existsSync(file) && process.env.RECORD_HISTORIES !== '1') return;
    await recordHistory(t.client, domainOwnershipWorkflowId(domain, token), file);
  };

  beforeAll(async () => {
    dns = await startTestDns();
    sites = Object.fromEntries(await Promise.all(Object.keys(D).map(async (k) => [k, await startTestSite()]))) as Record<keyof typeof D, Site>;
    for (const d of Object.values(D)) dns.setA(d, ['127.0.0.1']);
    sql = createSql(inject('databaseUrl'), { max: 4 });
    t = await connectTestTemporal('trust-own');
    const config = testConfig(env());
    worker = await t.createWorker({ workflowsPath, activities: createActivities({ config, sql }) });
    running = worker.run();
    app = await buildTestApp(env(), { sql, temporal: async () => t.client });
    shortApp = await buildTestApp({ ...env(), TRUST_CHALLENGE_TTL_MS: '2500' }, { sql, temporal: async () => t.client });
  }, 120_000);

  afterAll(async () => {
    for (const id of started) await t?.client.workflow.getHandle(id).terminate('test over').catch(() => undefined);
    await app?.close();
    await shortApp?.close();
    if (worker?.getState() === 'RUNNING') worker.shutdown();
    await running?.catch(() => undefined);
    await t?.close();
    await sql?.end();
    await dns?.close();
    for (const s of Object.values(sites ?? {})) await s.close();
  });

  it('hands out a challenge: token, the TXT record to publish, the well-known URL, 24 h; the same one again while it is open', async () => {
    const before = Date.now();
    const r = await get(app, `/api/trust/${D.dns}/challenge`);
    expect(r.status).toBe(200);
    expect(r.body.token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(r.body.dns_record).toBe(`_agent-passport.${D.dns}. TXT "agent-passport-verification=${r.body.token}"`);
    expect(r.body.well_known_url).toBe(`https://${D.dns}${WELL_KNOWN}`);
    const expires = Date.parse(r.body.expires_at);
    expect(expires).toBeGreaterThanOrEqual(before + 24 * 3600_000 - 1_000);
    expect(expires).toBeLessThanOrEqual(Date.now() + 24 * 3600_000 + 1_000);
    expect(r.body._links.verify).toEqual({ href: `/api/trust/${D.dns}/verify-ownership`, method: 'POST' });
    // the domain is normalised: another spelling gets the same open challenge
    const again = await get(app, `/api/trust/${D.dns.toUpperCase()}./challenge`);
    expect(again.status).toBe(200);
    expect(again.body.token).toBe(r.body.token);
    // the challenge's workflow runs
    const d = await t.client.workflow.getHandle(domainOwnershipWorkflowId(D.dns, r.body.token)).describe();
    expect(d.status.name).toBe('RUNNING');
  });

  it('refuses what is not a domain name (IP literals in any form, ports) with 400 trust_domain_invalid', async () => {
    for (const bad of ['127.0.0.1', '2852039166', '0xA9FEA9FE', '[::1]', `${D.dns}:443`, 'localhost']) {
      const r = await get(app, `/api/trust/${encodeURIComponent(bad)}/challenge`);
      expect(r.status, bad).toBe(400);
      expect(r.body.code, bad).toBe('trust_domain_invalid');
    }
    const v = await verify('127.0.0.1', { token: 'x'.repeat(43) });
    expect(v.status).toBe(400);
    expect(v.body.code).toBe('trust_domain_invalid');
  });

  it('proves ownership by the DNS TXT record: 403 before it is published, 200 after, then verified for good', async () => {
    const { body: ch } = await get(app, `/api/trust/${D.dns}/challenge`);
    const before = await verify(D.dns, { token: ch.token });
    expect(before.status).toBe(403);
    expect(before.body.code).toBe('trust_ownership_not_proven');
    expect(before.body.error).toContain('no TXT record');
    expect(before.body.hint).toContain(ch.dns_record);

    dns.setTxt(`_agent-passport.${D.dns}`, ['v=spf1 -all', `agent-passport-verification=${ch.token}`]);
    const after = await verify(D.dns, { token: ch.token });
    expect(after.status).toBe(200);
    expect(after.body).toMatchObject({ domain: D.dns, verified: true });
    expect(after.body.domain_ownership).toMatchObject({ method: 'dns', verified: true, challenge_token: ch.token });
    expect(after.body.domain_ownership.proof).toContain(`agent-passport-verification=${ch.token}`);
    expect(Number.isNaN(Date.parse(after.body.domain_ownership.verified_at))).toBe(false);

    // the workflow ended verified; the record may go away, the proof stays
    const end = await result(D.dns, ch.token);
    expect(end.status).toBe('verified');
    dns.clear(`_agent-passport.${D.dns}`);
    dns.setA(D.dns, ['127.0.0.1']);
    const again = await verify(D.dns, { token: ch.token });
    expect(again.status).toBe(200);
    expect(again.body.domain_ownership).toEqual(after.body.domain_ownership);
    expect(await findDomainOwnership(sql, D.dns)).toEqual(after.body.domain_ownership);
    await record(D.dns, ch.token, 'domainOwnershipVerified');
  });

  it('proves ownership by the well-known file', async () => {
    const { body: ch } = await get(app, `/api/trust/${D.web}/challenge`);
    const before = await verify(D.web, { token: ch.token });
    expect(before.status).toBe(403);
    expect(before.body.error).toContain('HTTP 404');
    sites.web.files.set(WELL_KNOWN, `${ch.token}\n`);
    const after = await verify(D.web, { token: ch.token });
    expect(after.status).toBe(200);
    expect(after.body.domain_ownership).toMatchObject({ method: 'well-known', verified: true, challenge_token: ch.token });
    expect(after.body.domain_ownership.proof).toContain(`https://${D.web}${WELL_KNOWN}`);
  });

  it('does not take a wrong token for proof (403), and answers 404 for a token the domain never had', async () => {
    const { body: ch } = await get(app, `/api/trust/${D.wrong}/challenge`);
    const { body: other } = await get(app, `/api/trust/${D.web}/challenge`);
    // the records hold a token, just not this challenge's
    dns.setTxt(`_agent-passport.${D.wrong}`, [`agent-passport-verification=${other.token}`]);
    sites.wrong.files.set(WELL_KNOWN, 'agent-passport-verification=not-the-token\n');
    const r = await verify(D.wrong, { token: ch.token });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('trust_ownership_not_proven');
    expect(r.body.error).toContain('none with the token');
    expect(r.body.error).toContain('does not hold the token');
    expect((await findDomainOwnership(sql, D.wrong))?.verified).toBe(false);

    // another domain's token, a well-formed unknown token, a malformed one: 404
    for (const token of [other.token, 'A'.repeat(43), 'short']) {
      const n = await verify(D.wrong, { token });
      expect(n.status, token).toBe(404);
      expect(n.body.code).toBe('trust_challenge_not_found');
    }
    // the body is strict
    expect((await verify(D.wrong, { token: ch.token, extra: 1 })).status).toBe(400);
    expect((await verify(D.wrong, {})).status).toBe(400);

    // with the workflow service down, a pending challenge cannot be checked: 503, retryable
    const down = await buildTestApp(env(), { sql, temporal: async () => Promise.reject(new Error('connection refused')) });
    try {
      const u = await verify(D.wrong, { token: ch.token }, down);
      expect(u.status).toBe(503);
      expect(u.body).toMatchObject({ code: 'service_unavailable', error: 'The workflow service is unavailable' });
    } finally {
      await down.close();
    }
  });

  it('the workflow proves ownership on its own once the record appears (no verify call)', async () => {
    const { body: ch } = await get(app, `/api/trust/${D.poll}/challenge`);
    expect((await findDomainOwnership(sql, D.poll))).toMatchObject({ verified: false, method: 'none', challenge_token: ch.token });
    dns.setTxt(`_agent-passport.${D.poll}`, [`agent-passport-verification=${ch.token}`]);
    const end = await result(D.poll, ch.token);
    expect(end.status).toBe('verified');
    expect(end.ownership).toMatchObject({ method: 'dns', verified: true });
    expect((await findDomainOwnership(sql, D.poll))?.verified).toBe(true);
  });

  it('expires: the workflow ends expired, verify answers 400 trust_challenge_expired, a late record proves nothing', async () => {
    const { body: ch } = await get(shortApp, `/api/trust/${D.expiry}/challenge`);
    const end = await result(D.expiry, ch.token);
    expect(end.status).toBe('expired');
    expect(end.ownership.verified).toBe(false);
    dns.setTxt(`_agent-passport.${D.expiry}`, [`agent-passport-verification=${ch.token}`]);
    const r = await verify(D.expiry, { token: ch.token });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('trust_challenge_expired');
    expect(await findDomainOwnership(sql, D.expiry)).toBeNull();
    // a new challenge is a new token
    const { body: next } = await get(app, `/api/trust/${D.expiry}/challenge`);
    expect(next.token).not.toBe(ch.token);
    await record(D.expiry, ch.token, 'domainOwnershipExpired');
  });

  it('a proven ownership shows in later snapshots (GET /api/trust/{domain})', async () => {
    const first = await get(app, `/api/trust/${D.snap}`);
    expect(first.status).toBe(200);
    expect(first.body.domain_ownership).toMatchObject({ verified: false, method: 'none' });
    const { body: ch } = await get(app, `/api/trust/${D.snap}/challenge`);
    sites.snap.files.set(WELL_KNOWN, ch.token);
    expect((await verify(D.snap, { token: ch.token })).status).toBe(200);
    const later = await get(app, `/api/trust/${D.snap}`);
    expect(later.status).toBe(200);
    expect(later.body.domain_ownership).toMatchObject({ method: 'well-known', verified: true, challenge_token: ch.token });
    expect(later.body.integrity.snapshot_hash).not.toBe(first.body.integrity.snapshot_hash);
  });
});
