/**
 * Issue 8 hardening over HTTP against PostgreSQL and a localnet: path parameters decoded once,
 * the one-line challenge, a challenge consumed only by a verified signature, 503 when the mirror
 * is down, the expired-challenge sweep, and the error catalog's affected_routes against the app's
 * real route table.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { signChallenge, signedHeaders, type TestAgent } from '../support/signing.js';
import { MirrorClient } from '../../ledger/mirror.js';
import { mirrorAccountKeys } from '../../api/auth/accountKeys.js';
import { PRINTABLE_ASCII_LINE } from '../../api/auth/challenge.js';
import { SERVICE_ERRORS, SPEC_ERRORS, isCatalogCode } from '../../domain/errors.js';
import { lazyTemporalClient } from '../../temporal/client.js';
import { testConfig } from '../support/app.js';

/** A fetch response's JSON body. */
async function jsonOf(res: Response): Promise<Record<string, any>> {
  return (await res.json()) as Record<string, any>;
}


/** A port nothing listens on: the mirror "outage". */
async function closedPort(): Promise<number> {
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}

function addWhoami(app: FastifyInstance) {
  app.withTypeProvider<ZodTypeProvider>().post(
    '/__test/whoami',
    { schema: { body: z.object({ did: z.string() }) }, preHandler: app.signedRequest((req) => (req.body as { did: string }).did) },
    async (req) => ({ did: req.auth!.did }),
  );
}

describe('issue 8 hardening against PostgreSQL and localnet', () => {
  let stack: LedgerStack;
  let sql: Sql;
  let app: FastifyInstance;
  let base: string;
  let agent: TestAgent;
  let other: TestAgent;
  const temporal = lazyTemporalClient(testConfig({ TEMPORAL_ADDRESS: inject('temporalAddress') }));

  beforeAll(async () => {
    stack = await startLedgerStack('hardening');
    sql = createSql(inject('databaseUrl'), { max: 4 });
    // Every optional route group on (the codec needs its key), so the route table is the full one.
    const env = { ...stack.env, TEMPORAL_ADDRESS: inject('temporalAddress'), AUTH_CHALLENGE_SWEEP_MS: '200', PAYLOAD_CODEC_KEY: randomBytes(32).toString('hex'), ADMIN_TOKEN_SHA256: 'ab'.repeat(32) };
    app = await buildTestApp(env, { sql, ledger: stack.ledger, temporal: temporal.get });
    addWhoami(app);
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    const accounts = stack.localnet.config.accounts;
    agent = accounts.find((a) => a.keyType === 'ED25519')!;
    other = accounts.find((a) => a.keyType === 'ECDSA')!;
  }, 120_000);
  afterAll(async () => {
    await app?.close();
    await temporal.close();
    await sql?.end();
    await stack?.stop();
  });

  const whoami = (headers: Record<string, string>, did = agent.did) =>
    fetch(`${base}/__test/whoami`, { method: 'POST', headers: { ...headers, 'content-type': 'application/json' }, body: JSON.stringify({ did }) });

  it.each(['/passport/address/%25', '/did/%25', '/passport/address/%2525', '/did/did%3Ahedera%3Alocal%3A%25'])('GET %s answers 400 invalid_request, not 500', async (path) => {
    const res = await fetch(`${base}${path}`);
    expect(res.status).toBe(400);
    const body = await jsonOf(res);
    expect(body.code).toBe('invalid_request');
    expect(isCatalogCode(body.code)).toBe(true);
  });

  it('path parameters are decoded exactly once: an encoded DID resolves like the raw one', async () => {
    const raw = await fetch(`${base}/did/${agent.did}`);
    const encoded = await fetch(`${base}/did/${encodeURIComponent(agent.did)}`);
    expect(encoded.status).toBe(raw.status);
    expect((await jsonOf(encoded)).code).toBe((await jsonOf(raw)).code);
  });

  it('the challenge is one line of printable ASCII that travels raw in a header', async () => {
    const res = await fetch(`${base}/auth/challenge?did=${agent.did}`);
    const { challenge } = await jsonOf(res);
    expect(challenge).toMatch(PRINTABLE_ASCII_LINE);
    expect(challenge).not.toContain('\n');
    expect(challenge).toContain(agent.did);
    const ok = await whoami({ 'x-service-did': agent.did, 'x-service-challenge': challenge, 'x-service-signature': signChallenge(agent, challenge) });
    expect(ok.status).toBe(200);
  });

  it('a percent-encoded challenge is still accepted', async () => {
    const { challenge } = await jsonOf(await fetch(`${base}/auth/challenge?did=${agent.did}`));
    const res = await whoami({ 'x-service-did': agent.did, 'x-service-challenge': encodeURIComponent(challenge), 'x-service-signature': signChallenge(agent, challenge) });
    expect(res.status).toBe(200);
  });

  it('a bad signature does not consume the challenge; the verified request does, once', async () => {
    const headers = await signedHeaders(app, agent);
    const bad = await whoami({ ...headers, 'x-service-signature': signChallenge(other, headers['x-service-challenge']) });
    expect(bad.status).toBe(401);
    expect((await jsonOf(bad)).code).toBe('auth_signature_invalid');
    const garbage = await whoami({ ...headers, 'x-service-signature': 'zz' });
    expect((await jsonOf(garbage)).code).toBe('auth_signature_invalid');
    const ok = await whoami(headers);
    expect(ok.status).toBe(200);
    const replay = await whoami(headers);
    expect(replay.status).toBe(401);
    expect((await jsonOf(replay)).code).toBe('auth_challenge_expired');
  });

  it('two concurrent requests with one challenge: exactly one is served', async () => {
    const headers = await signedHeaders(app, agent);
    const results = await Promise.all(Array.from({ length: 5 }, () => whoami(headers)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([200, 401, 401, 401, 401]);
  });

  it('a mirror outage while resolving the signer key answers 503 service_unavailable and keeps the challenge', async () => {
    const deadMirror = new MirrorClient(`http://127.0.0.1:${await closedPort()}/api/v1`);
    const down = await buildTestApp(stack.env, { sql, ledger: { ...stack.ledger, mirror: deadMirror, keys: mirrorAccountKeys(deadMirror) } });
    addWhoami(down);
    try {
      const headers = await signedHeaders(app, agent);
      const res = await down.inject({ method: 'POST', url: '/__test/whoami', headers, payload: { did: agent.did } });
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('service_unavailable');
      expect(res.json().retryable).toBe(true);
      // The challenge was not used up by the failed attempt.
      expect((await whoami(headers)).status).toBe(200);
    } finally {
      await down.close();
    }
  });

  it('over-long signature headers answer 400 in the error schema', async () => {
    const res = await whoami({ 'x-service-did': `did:hedera:local:${'1'.repeat(500)}`, 'x-service-challenge': 'x', 'x-service-signature': 'ab' });
    expect(res.status).toBe(400);
    expect((await jsonOf(res)).code).toBe('invalid_request');
  });

  it('expired challenges are deleted on a schedule; live ones stay', async () => {
    const tag = `sweep-${Date.now()}`;
    await sql`insert into auth_challenges (challenge, did, expires_at) values
      (${`${tag}-old-1`}, ${agent.did}, now() - interval '1 hour'),
      (${`${tag}-old-2`}, ${agent.did}, now() - interval '1 second'),
      (${`${tag}-live`}, ${agent.did}, now() + interval '5 minutes')`;
    const deadline = Date.now() + 15_000;
    let left: string[] = [];
    while (Date.now() < deadline) {
      left = (await sql<{ challenge: string }[]>`select challenge from auth_challenges where challenge like ${`${tag}-%`} order by challenge`).map((r) => r.challenge);
      if (left.length === 1) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(left).toEqual([`${tag}-live`]);
  });

  describe('error catalog affected_routes', () => {
    const entries = [...SPEC_ERRORS, ...SERVICE_ERRORS];

    it('every listed route exists in the app route table', () => {
      const missing: string[] = [];
      for (const e of entries) {
        for (const url of e.affected_routes) {
          if (url === '*') continue;
          if (!['GET', 'POST', 'PUT', 'PATCH', 'DELETE'].some((method) => app.hasRoute({ method, url }))) missing.push(`${e.code}: ${url}`);
        }
      }
      expect(missing).toEqual([]);
    });

    it('a code thrown by a route file is listed for one of its routes (or for every route)', () => {
      const byCode = new Map<string, readonly string[]>(entries.map((e) => [e.code, e.affected_routes]));
      const problems: string[] = [];
      const dir = new URL('../../api/routes/', import.meta.url);
      for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
        const source = readFileSync(new URL(file, dir), 'utf8');
        const routes = [...source.matchAll(/app\.(?:get|post|put|patch|delete)\(\s*'([^']+)'/g)].map((m) => m[1]);
        const codes = new Set([...source.matchAll(/new ApiError\('([a-z0-9_]+)'/g)].map((m) => m[1]));
        for (const code of codes) {
          const listed = byCode.get(code) ?? [];
          if (listed.includes('*')) continue;
          if (!routes.some((r) => listed.includes(r))) problems.push(`${file}: ${code} not listed for any of ${routes.join(', ')}`);
        }
      }
      expect(problems).toEqual([]);
    });
  });
});
