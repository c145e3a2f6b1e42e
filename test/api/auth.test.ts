import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { signChallenge, signedHeaders, type TestAgent } from '../support/signing.js';

describe('DID signature authentication against localnet', () => {
  let stack: LedgerStack;
  let sql: Sql;
  let app: FastifyInstance;
  let ed: TestAgent;
  let ecdsa: TestAgent;

  beforeAll(async () => {
    stack = await startLedgerStack('auth');
    sql = createSql(inject('databaseUrl'), { max: 3 });
    app = await buildTestApp(stack.env, { sql, ledger: stack.ledger });
    // A route guarded like the product routes: the body names the acting DID.
    app.withTypeProvider<ZodTypeProvider>().post(
      '/__test/whoami',
      { schema: { body: z.object({ did: z.string() }) }, preHandler: app.signedRequest((req) => (req.body as { did: string }).did) },
      async (req) => ({ did: req.auth!.did, keyType: req.auth!.keyType }),
    );
    const accounts = stack.localnet.config.accounts;
    ed = accounts.find((a) => a.keyType === 'ED25519')!;
    ecdsa = accounts.find((a) => a.keyType === 'ECDSA')!;
  });
  afterAll(async () => {
    await app?.close();
    await sql?.end();
    await stack?.stop();
  });

  const whoami = (headers: Record<string, string>, did: string) => app.inject({ method: 'POST', url: '/__test/whoami', headers, payload: { did } });

  it('GET /auth/challenge returns a challenge naming the service, the DID and the expiry', async () => {
    const res = await app.inject(`/auth/challenge?did=${ed.did}`);
    expect(res.statusCode).toBe(200);
    const { challenge, expiresAt } = res.json();
    expect(challenge).toContain('agent-passport');
    expect(challenge).toContain(ed.did);
    const ttl = new Date(expiresAt).getTime() - Date.now();
    expect(ttl).toBeGreaterThan(290_000);
    expect(ttl).toBeLessThanOrEqual(300_000);
  });

  it('GET /auth/challenge refuses a malformed DID with 400', async () => {
    const res = await app.inject('/auth/challenge?did=did:web:example.com');
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('invalid_request');
  });

  it.each(['ED25519', 'ECDSA'] as const)('accepts a valid %s signature once', async (type) => {
    const agent = type === 'ED25519' ? ed : ecdsa;
    const headers = await signedHeaders(app, agent);
    const ok = await whoami(headers, agent.did);
    expect(ok.statusCode).toBe(200);
    expect(ok.json()).toEqual({ did: agent.did, keyType: type });
    const replay = await whoami(headers, agent.did);
    expect(replay.statusCode).toBe(401);
    expect(replay.json().code).toBe('auth_challenge_expired');
  });

  it('auth_header_missing when a header is absent', async () => {
    const headers = await signedHeaders(app, ed);
    delete headers['x-service-signature'];
    const res = await whoami(headers, ed.did);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('auth_header_missing');
  });

  it('every 401 names the DID signature scheme, its headers and the challenge URL in WWW-Authenticate', async () => {
    const challengeUri = 'http://localhost:80/auth/challenge';
    const none = await whoami({}, ed.did);
    expect(none.statusCode).toBe(401);
    expect(none.json().code).toBe('auth_header_missing');
    expect(none.headers['www-authenticate']).toBe(
      `DID-Challenge realm="agent-passport", challenge_uri="${challengeUri}", headers="x-service-did x-service-challenge x-service-signature", algorithms="ed25519 ecdsa-secp256k1"`,
    );
    // the challenge URL it names issues challenges
    const uri = /challenge_uri="([^"]+)"/.exec(none.headers['www-authenticate'] as string)![1]!;
    expect((await app.inject(`${new URL(uri).pathname}?did=${ed.did}`)).statusCode).toBe(200);
    // a signature that fails: the same challenge with the catalog code as error
    const headers = await signedHeaders(app, ed);
    const bad = await whoami({ ...headers, 'x-service-signature': headers['x-service-signature']!.replace(/^../, (h) => (h === '00' ? '01' : '00')) }, ed.did);
    expect(bad.statusCode).toBe(401);
    expect(bad.headers['www-authenticate']).toMatch(/^DID-Challenge realm="agent-passport", challenge_uri="[^"]+", headers="[^"]+", algorithms="[^"]+", error="auth_signature_invalid", error_description="[^"]+"$/);
  });

  it('auth_signature_invalid when signed by another key', async () => {
    const headers = await signedHeaders(app, ed);
    const challenge = decodeURIComponent(headers['x-service-challenge']);
    headers['x-service-signature'] = signChallenge({ ...ecdsa }, challenge);
    const res = await whoami(headers, ed.did);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('auth_signature_invalid');
  });

  it('auth_did_unresolved for an account that does not exist', async () => {
    const ghost = 'did:hedera:local:0.0.987654';
    const res = await whoami({ 'x-service-did': ghost, 'x-service-challenge': 'x', 'x-service-signature': 'ab' }, ghost);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('auth_did_unresolved');
  });

  it('auth_challenge_expired for a challenge issued to another DID', async () => {
    const headers = await signedHeaders(app, ecdsa);
    const challenge = decodeURIComponent(headers['x-service-challenge']);
    const res = await whoami({ 'x-service-did': ed.did, 'x-service-challenge': encodeURIComponent(challenge), 'x-service-signature': signChallenge(ed, challenge) }, ed.did);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('auth_challenge_expired');
  });

  it('auth_challenge_expired once the challenge is past its expiry', async () => {
    const headers = await signedHeaders(app, ed);
    await sql`update auth_challenges set expires_at = now() - interval '1 second' where challenge = ${decodeURIComponent(headers['x-service-challenge'])}`;
    const res = await whoami(headers, ed.did);
    expect(res.statusCode).toBe(401);
    expect(res.json().code).toBe('auth_challenge_expired');
  });

  it('403 auth_did_mismatch when the body names another DID', async () => {
    const headers = await signedHeaders(app, ed);
    const res = await whoami(headers, ecdsa.did);
    expect(res.statusCode).toBe(403);
    expect(res.json().code).toBe('auth_did_mismatch');
  });
});
