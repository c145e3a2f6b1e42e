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

const CATALOG_CODES = new Set([...SPEC_ERRORS, ...SERVICE_ERRORS].map((e) => e.code as string));

interface RouteFile {
  /** path under api/routes/ */
  file: string;
  /** the sub-folder ('' at the top level) */
  folder: string;
  /** the routes it declares: the path (a string literal or a string constant of the file) and the text of the call's options */
  routes: { url: string; options: string }[];
  /** every catalog code written as a string literal in the file (thrown, mapped or chosen) */
  codes: Set<string>;
}

/**
 * Every route file of api/routes/**: the routes it declares with `app.get('/path', ...)` or
 * `app.post(SOME_ROUTE, ...)` (SOME_ROUTE a `const` of the file) and the catalog codes it names.
 */
function routeFiles(): RouteFile[] {
  const root = new URL('../../api/routes/', import.meta.url);
  const files = (readdirSync(root, { recursive: true }) as string[]).filter((f) => f.endsWith('.ts')).sort();
  return files.map((file) => {
    const rel = file.includes('/') ? `${file.slice(0, file.lastIndexOf('/'))}/` : '';
    const source = readFileSync(new URL(file, root), 'utf8');
    const constants = new Map([...source.matchAll(/const\s+([A-Z][A-Z0-9_]*)\s*=\s*'([^']+)'/g)].map((m) => [m[1]!, m[2]!]));
    const calls = [...source.matchAll(/app\.(?:get|post|put|patch|delete)\(\s*(?:'([^']+)'|([A-Z][A-Z0-9_]*)\b)/g)];
    const routes = calls.flatMap((m, i) => {
      const url = m[1] ?? constants.get(m[2]!);
      // the call's options: up to the next route declaration (enough to see its preHandler)
      const options = source.slice(m.index!, calls[i + 1]?.index ?? source.length).split(/\n\s*async \(/)[0]!;
      return url ? [{ url, options }] : [];
    });
    const codes = new Set([...source.matchAll(/'([a-z0-9_]+)'/g)].map((m) => m[1]!).filter((c) => CATALOG_CODES.has(c)));
    return { file, folder: rel.replace(/\/$/, ''), routes, codes };
  });
}

/**
 * The feature homes under api/ (issue 21: a feature's state and orchestration, which throw most of its
 * refusals) and the route files that answer through them.
 */
const FEATURE_ROUTES: Record<string, string[]> = {
  market: ['market/'],
  passports: ['passports.ts', 'admin.ts', 'did.ts', 'audit.ts'],
  agents: ['agents/', 'agentCard.ts'],
  registry: ['registry/', 'oauth.ts'],
  trust: ['trust/', 'wellKnown.ts'],
  a2a: ['a2a.ts'],
  search: ['search.ts', 'feed.ts'],
  health: ['health.ts'],
};

/** Every source file of a feature home, with the catalog codes it names (same reading as routeFiles). */
function featureFiles(): { file: string; feature: string; codes: Set<string> }[] {
  const root = new URL('../../api/', import.meta.url);
  return Object.keys(FEATURE_ROUTES).flatMap((feature) =>
    (readdirSync(new URL(`${feature}/`, root), { recursive: true }) as string[])
      .filter((f) => f.endsWith('.ts'))
      .sort()
      .map((f) => {
        const source = readFileSync(new URL(`${feature}/${f}`, root), 'utf8');
        const codes = new Set([...source.matchAll(/'([a-z0-9_]+)'/g)].map((m) => m[1]!).filter((c) => CATALOG_CODES.has(c)));
        return { file: `${feature}/${f}`, feature, codes };
      }),
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

  // issue 26 item 7: PostgreSQL refuses NUL in text, and these two answered 500
  it.each(['/market/tasks?posterDid=%00', '/market/tasks?claimerDid=%00'])('GET %s answers 400 invalid_request with the rate-limit headers, not 500', async (path) => {
    const res = await fetch(`${base}${path}`);
    const body = await jsonOf(res);
    expect({ status: res.status, code: body.code }).toEqual({ status: 400, code: 'invalid_request' });
    expect(body.error).toMatch(/NUL/);
    expect(typeof body.hint).toBe('string');
    expect(res.headers.get('x-ratelimit-limit')).toMatch(/^\d+$/);
    expect(res.headers.get('x-ratelimit-remaining')).toMatch(/^\d+$/);
  });

  it('a NUL or bytes that are not UTF-8 anywhere in the query, the path or the body: 400 invalid_request with the rate-limit headers', async () => {
    const did = encodeURIComponent(agent.did);
    const json = (text: string | Buffer) => ({ method: 'POST', headers: { 'content-type': 'application/json' }, body: text });
    const cases: [string, string, RequestInit?][] = [
      ['query, NUL', `/agents?name=a%00b`],
      ['query, not UTF-8', `/market/tasks?posterDid=%FF`],
      ['query, cut-off character', `/agents?name=%C3`],
      ['query, a surrogate encoded as UTF-8', `/market/tasks?claimerDid=%ED%A0%80`],
      ['path, NUL', `/agents/${did}%00`],
      ['path, not UTF-8', `/did/${did}%C3%28`],
      ['body, NUL escaped in JSON', '/market/tasks/signed', json('{"posterDid":"did:hedera:local:0.0.2","title":"a\\u0000b","priceHbar":1}')],
      ['body, NUL in a key', '/market/tasks/signed', json('{"a\\u0000":1}')],
      ['body, a lone surrogate', '/market/tasks/signed', json('{"title":"\\ud800"}')],
      ['body, bytes that are not UTF-8', '/market/tasks/signed', json(Buffer.concat([Buffer.from('{"title":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]))],
      ['body, not UTF-8 at its very end', '/market/tasks/signed', json(Buffer.concat([Buffer.from('{"title":"x"}'), Buffer.from([0xe2, 0x82])]))],
    ];
    const seen: Record<string, unknown> = {};
    for (const [name, path, init] of cases) {
      const res = await fetch(`${base}${path}`, init);
      const body: Record<string, any> = await jsonOf(res).catch(() => ({}));
      seen[name] = { status: res.status, code: body.code, limited: res.headers.get('x-ratelimit-limit') !== null };
    }
    const expected = Object.fromEntries(cases.map(([name]) => [name, { status: 400, code: 'invalid_request', limited: true }]));
    expect(seen).toEqual(expected);
    // text that is fine still passes the check (and meets each route's own validation as before)
    expect((await fetch(`${base}/agents?name=${encodeURIComponent('café 🦀')}`)).status).toBe(200);
    expect((await fetch(`${base}/agents?name=100%`)).status).toBe(200); // a literal % stays literal text
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

    it('a code a route file answers is listed for one of its routes, in every folder of api/routes (or for every route)', () => {
      const byCode = new Map<string, readonly string[]>(entries.map((e) => [e.code, e.affected_routes]));
      const problems: string[] = [];
      const listedFor = (code: string, routes: string[]) => {
        const listed = byCode.get(code) ?? [];
        return listed.includes('*') || routes.some((r) => listed.includes(r));
      };
      const files = routeFiles();
      expect(files.map((f) => f.file)).toEqual(expect.arrayContaining(['market/tasks.ts', 'agents/index.ts', 'trust/attest.ts', 'registry/index.ts']));
      for (const { file, folder, routes, codes } of files) {
        // a helper file declaring no route (market/shared.ts ...) answers through the routes of its folder
        const own = routes.length ? routes.map((r) => r.url) : files.filter((f) => f.folder === folder && folder !== '').flatMap((f) => f.routes.map((r) => r.url));
        for (const code of codes) if (!listedFor(code, own)) problems.push(`${file}: ${code} not listed for any of ${own.join(', ') || '(no routes)'}`);
      }
      expect(problems).toEqual([]);
    });

    it("a code a feature home (api/<feature>/) answers is listed for one of its feature's routes (or for every route)", () => {
      const byCode = new Map<string, readonly string[]>(entries.map((e) => [e.code, e.affected_routes]));
      const routes = routeFiles();
      const problems: string[] = [];
      const homes = featureFiles();
      expect(homes.map((f) => f.file)).toEqual(expect.arrayContaining(['market/posting.ts', 'passports/issuance.ts', 'trust/ownership.ts', 'a2a/messages.ts']));
      for (const { file, feature, codes } of homes) {
        const own = routes.filter((r) => FEATURE_ROUTES[feature]!.some((prefix) => r.file === prefix || r.file.startsWith(prefix))).flatMap((r) => r.routes.map((x) => x.url));
        for (const code of codes) {
          const listed = byCode.get(code) ?? [];
          if (!listed.includes('*') && !own.some((r) => listed.includes(r))) problems.push(`api/${file}: ${code} not listed for any of ${own.join(', ') || '(no routes)'}`);
        }
      }
      expect(problems).toEqual([]);
    });

    it('a route behind DID signature headers lists every signature refusal (and auth_did_mismatch when it names the DID)', () => {
      const byCode = new Map<string, readonly string[]>(entries.map((e) => [e.code, e.affected_routes]));
      const problems: string[] = [];
      let signed = 0;
      for (const { file, routes } of routeFiles()) {
        for (const route of routes) {
          if (!/signedRequest\(/.test(route.options)) continue;
          signed += 1;
          const codes = ['auth_header_missing', 'auth_did_unresolved', 'auth_signature_invalid', 'auth_challenge_expired'];
          if (/signedRequest\(\s*(\(|bodyDid\()/.test(route.options)) codes.push('auth_did_mismatch');
          for (const code of codes) if (!(byCode.get(code) ?? []).includes(route.url)) problems.push(`${file} ${route.url}: ${code}`);
        }
      }
      expect(signed).toBeGreaterThan(10);
      expect(problems).toEqual([]);
    });
  });
});
