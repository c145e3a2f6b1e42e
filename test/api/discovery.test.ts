// Discovery documents and the OAuth client-credentials flow over real HTTP, against real PostgreSQL
// (SPEC 2 "OAuth and discovery documents", 4.7; DESIGN.md 10): each document field by field, every
// endpoint the metadata names answering (never 404), tokens from the token endpoint accepted on
// /api/v1/agents/me and by the keyed rate limit, and every refusal of the token endpoint.
import { generateKeyPairSync } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createLocalJWKSet, decodeProtectedHeader, jwtVerify, SignJWT, type JWK } from 'jose';
import canonicalize from 'canonicalize';
import { canonicalizeAgentCard, verifyAgentCardSignature } from '@a2a-js/sdk';
import { createSql, type Sql } from '../../db/client.js';
import { CHANNELS, notifyChange } from '../../db/notify.js';
import { passportKey } from '../../db/queries/passports.js';
import { buildTestApp } from '../support/app.js';
import { recordSecret } from '../support/secrets.js';

interface Res {
  status: number;
  headers: Headers;
  body: any;
}

describe('discovery documents and OAuth client credentials', () => {
  let sql: Sql;
  let app: FastifyInstance;
  let base: string;
  // a passport and a directory entry written straight into the projections (ids no other test uses)
  const account = `0.0.${700_000 + (process.pid % 90_000)}`;
  const did = `did:hedera:local:${account}`;
  const tokenId = '0.0.977001';
  const serial = 1 + (process.pid % 100_000);

  const get = async (path: string, headers: Record<string, string> = {}): Promise<Res> => {
    const res = await fetch(path.startsWith('http') ? path : `${base}${path}`, { headers });
    const text = await res.text();
    let body: any = text;
    try {
      body = JSON.parse(text);
    } catch {
      /* not JSON */
    }
    return { status: res.status, headers: res.headers, body };
  };
  const post = async (url: string, body: string, headers: Record<string, string>): Promise<Res> => {
    const res = await fetch(url.startsWith('http') ? url : `${base}${url}`, { method: 'POST', headers, body });
    return { status: res.status, headers: res.headers, body: await res.json() };
  };
  const form = (params: Record<string, string>) => new URLSearchParams(params).toString();
  const FORM = { 'content-type': 'application/x-www-form-urlencoded' };
  const basic = (id: string, secret: string) => ({ authorization: `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}` });
  const registerKey = async (name: string) => {
    const r = await post('/api/v1/agents/register', JSON.stringify({ name }), { 'content-type': 'application/json' });
    expect(r.status).toBe(200);
    recordSecret('registry api key', r.body.api_key); // shown once, never stored nor logged
    return { id: r.body.id as string, key: r.body.api_key as string };
  };

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 4 });
    // other files of the run (the fuzz test) register from 127.0.0.1 in the same database: this file
    // does not test the per-IP cap (registry.test.ts does, with fresh addresses), so it lifts it
    app = await buildTestApp({ RATE_LIMIT_MAX: '100000', REGISTRY_KEY_RATE_LIMIT_MAX: '250', REGISTER_DAILY_CAP_PER_IP: '100000' }, { sql });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    await sql`
      insert into passports (network, token_id, serial, account_id, did, tier, capabilities, issued_at, payment_transaction_id)
      values ('local', ${tokenId}, ${serial}, ${account}, ${did}, 'gold', ${sql.json(['api_call', 'payment'])}, now(), ${`pay-${process.pid}`})
      on conflict do nothing`;
    // as the passport writes do: announce it, so the app's passport cache (already loading) has it
    await notifyChange(sql, CHANNELS.passport, passportKey(tokenId, serial));
    await sql`
      insert into agents (did, network, account_id, token_id, serial, name, capabilities, endpoint, agent_card, tier, registered_at, status, directory_sequence)
      values (${did}, 'local', ${account}, ${tokenId}, ${serial}, ${`wf-agent-${process.pid}`}, ${sql.json(['api_call'])}, 'https://agent.example/a2a',
              'https://agent.example/.well-known/agent-card.json', 'gold', now(), 'registered', 1)
      on conflict do nothing`;
  });
  afterAll(async () => {
    await app?.close();
    await sql`delete from agents where did = ${did}`.catch(() => {});
    await sql`delete from passports where token_id = ${tokenId} and serial = ${serial}`.catch(() => {});
    await sql?.end();
  });

  it('/.well-known/oauth-authorization-server (RFC 8414), field by field', async () => {
    const r = await get('/.well-known/oauth-authorization-server');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.body).toEqual({
      issuer: base,
      authorization_endpoint: `${base}/oauth/authorize`,
      token_endpoint: `${base}/oauth/token`,
      registration_endpoint: `${base}/oauth/register`,
      jwks_uri: `${base}/oauth/jwks.json`,
      scopes_supported: ['registry'],
      response_types_supported: [],
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      service_documentation: `${base}/docs`,
    });
    // RFC 8414 3.3: the issuer is the URL the metadata was fetched under, without the well-known suffix
    expect(new URL(r.body.issuer).pathname).toBe('/');
  });

  it('every endpoint the authorization-server metadata names answers (never 404)', async () => {
    const m = (await get('/.well-known/oauth-authorization-server')).body;
    // authorization endpoint: RFC 6749 error for any request, never a redirect
    for (const url of [m.authorization_endpoint, `${m.authorization_endpoint}?response_type=code&client_id=x&redirect_uri=https://evil.example/cb`]) {
      const res = await fetch(url, { redirect: 'manual' });
      expect(res.status).toBe(400);
      expect(res.headers.get('location')).toBeNull();
      expect(await res.json()).toMatchObject({ error: 'unsupported_response_type', code: 'invalid_request' });
    }
    const { id, key } = await registerKey('metadata-client');
    const reg = await post(m.registration_endpoint, JSON.stringify({ client_name: 'via-metadata', grant_types: ['client_credentials'] }), { 'content-type': 'application/json' });
    expect(reg.status).toBe(201);
    expect(reg.body.client_secret).toMatch(/^apk_/);
    recordSecret('oauth client secret', reg.body.client_secret);
    const tok = await post(m.token_endpoint, form({ grant_type: 'client_credentials' }), { ...FORM, ...basic(id, key) });
    expect(tok.status).toBe(200);
    const jwks = await get(m.jwks_uri);
    expect(jwks.status).toBe(200);
    expect(jwks.body.keys).toHaveLength(1);
    expect(jwks.body.keys[0]).toMatchObject({ kty: 'OKP', crv: 'Ed25519', alg: 'EdDSA', use: 'sig' });
    expect(jwks.body.keys[0].d).toBeUndefined(); // public only
    expect((await get(m.service_documentation)).status).toBe(200);
  });

  it('client credentials by Basic and by post: an EdDSA JWT accepted on /me and by the keyed rate limit', async () => {
    const { id, key } = await registerKey('token-client');
    const byBasic = await post('/oauth/token', form({ grant_type: 'client_credentials' }), { ...FORM, ...basic(id, key) });
    const byPost = await post('/oauth/token', form({ grant_type: 'client_credentials', client_id: id, client_secret: key, scope: 'registry' }), FORM);
    const byJson = await post('/oauth/token', JSON.stringify({ grant_type: 'client_credentials', client_id: id, client_secret: key }), { 'content-type': 'application/json' });
    for (const r of [byBasic, byPost, byJson]) {
      expect(r.status).toBe(200);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(Object.keys(r.body).sort()).toEqual(['access_token', 'expires_in', 'scope', 'token_type']);
      expect(r.body).toMatchObject({ token_type: 'Bearer', expires_in: 600, scope: 'registry' });
    }
    const token = byBasic.body.access_token as string;
    for (const r of [byBasic, byPost, byJson]) recordSecret('oauth access token', r.body.access_token);
    expect(token).not.toContain(key.slice(4));
    const header = decodeProtectedHeader(token);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'at+jwt' });
    const jwks = createLocalJWKSet((await get('/oauth/jwks.json')).body);
    const { payload } = await jwtVerify(token, jwks, { issuer: base, audience: base, typ: 'at+jwt' });
    expect(payload).toMatchObject({ sub: id, client_id: id, scope: 'registry' });
    expect(payload.exp! - payload.iat!).toBe(600);

    const me = await get('/api/v1/agents/me', { authorization: `Bearer ${token}` });
    expect(me.status).toBe(200);
    expect(me.body).toMatchObject({ id, name: 'token-client', status: 'active' });
    expect(me.headers.get('x-ratelimit-limit')).toBe('250'); // the key's window, not the address's

    // tampered, or signed by another key: 401 agent_key_invalid
    const [h, p, s] = token.split('.');
    const tampered = `${h}.${Buffer.from(JSON.stringify({ ...payload, sub: '00000000-0000-7000-8000-000000000000' })).toString('base64url')}.${s}`;
    const foreign = await new SignJWT({ client_id: id })
      .setProtectedHeader({ alg: 'EdDSA', typ: 'at+jwt', kid: header.kid! })
      .setIssuer(base)
      .setAudience(base)
      .setSubject(id)
      .setIssuedAt()
      .setExpirationTime('5m')
      .sign(generateKeyPairSync('ed25519').privateKey);
    for (const bad of [tampered, foreign, `${h}.${p}.`]) {
      const r = await get('/api/v1/agents/me', { authorization: `Bearer ${bad}` });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('agent_key_invalid');
    }

    // revoking the registration (through the token itself) ends the token and the key at once
    const del = await fetch(`${base}/api/v1/agents/me`, { method: 'DELETE', headers: { authorization: `Bearer ${byPost.body.access_token}` } });
    expect(del.status).toBe(200);
    const after = await get('/api/v1/agents/me', { authorization: `Bearer ${token}` });
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('agent_key_revoked');
    const again = await post('/oauth/token', form({ grant_type: 'client_credentials' }), { ...FORM, ...basic(id, key) });
    expect(again.status).toBe(401);
    expect(again.body).toMatchObject({ error: 'invalid_client', code: 'agent_key_revoked' });
  });

  it('token endpoint refusals follow RFC 6749 5.2 and carry the catalog code', async () => {
    const { id, key } = await registerKey('refusals');
    const other = await registerKey('other');
    const wrongSecret = await post('/oauth/token', form({ grant_type: 'client_credentials' }), { ...FORM, ...basic(id, other.key) });
    expect(wrongSecret.status).toBe(401);
    expect(wrongSecret.body).toMatchObject({ error: 'invalid_client', code: 'agent_key_invalid' });
    expect(typeof wrongSecret.body.error_description).toBe('string');
    expect(wrongSecret.headers.get('www-authenticate')).toMatch(/^Basic realm=/);
    const noAuth = await post('/oauth/token', form({ grant_type: 'client_credentials' }), FORM);
    expect(noAuth.status).toBe(401);
    expect(noAuth.body.error).toBe('invalid_client');
    const both = await post('/oauth/token', form({ grant_type: 'client_credentials', client_secret: key }), { ...FORM, ...basic(id, key) });
    expect(both.status).toBe(400);
    expect(both.body.error).toBe('invalid_request');
    const grant = await post('/oauth/token', form({ grant_type: 'password' }), { ...FORM, ...basic(id, key) });
    expect(grant.status).toBe(400);
    expect(grant.body.error).toBe('unsupported_grant_type');
    const noGrant = await post('/oauth/token', form({}), { ...FORM, ...basic(id, key) });
    expect(noGrant.body.error).toBe('invalid_request');
    const scope = await post('/oauth/token', form({ grant_type: 'client_credentials', scope: 'admin' }), { ...FORM, ...basic(id, key) });
    expect(scope.status).toBe(400);
    expect(scope.body.error).toBe('invalid_scope');
    const repeated = await post('/oauth/token', 'grant_type=client_credentials&grant_type=client_credentials', { ...FORM, ...basic(id, key) });
    expect(repeated.status).toBe(400);
    expect(repeated.body.error).toBe('invalid_request');
    for (const r of [wrongSecret, noAuth, both, grant, noGrant, scope, repeated]) expect(r.headers.get('cache-control')).toBe('no-store');
  });

  it('every 401 of a Bearer route carries WWW-Authenticate (RFC 6750 3) naming the resource metadata (RFC 9728 5.1)', async () => {
    const metadata = `${base}/.well-known/oauth-protected-resource`;
    // no credential: the scheme, realm and metadata, no error code (RFC 6750 3.1)
    const none = await get('/api/v1/agents/me');
    expect(none.status).toBe(401);
    expect(none.body.code).toBe('agent_key_invalid');
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="agent-passport", resource_metadata="${metadata}"`);
    // a bad key, a bad token, a revoked key: error="invalid_token" with a description
    const { key } = await registerKey('www-authenticate');
    expect((await fetch(`${base}/api/v1/agents/me`, { method: 'DELETE', headers: { authorization: `Bearer ${key}` } })).status).toBe(200);
    for (const [credential, code] of [
      [`apk_${'A'.repeat(43)}`, 'agent_key_invalid'],
      ['eyJhbGciOiJFZERTQSIsInR5cCI6ImF0K2p3dCJ9.e30.AAAA', 'agent_key_invalid'],
      [key, 'agent_key_revoked'],
    ] as const) {
      const r = await get('/api/v1/agents/me', { authorization: `Bearer ${credential}` });
      expect(r.status).toBe(401);
      expect(r.body.code).toBe(code);
      const challenge = r.headers.get('www-authenticate')!;
      expect(challenge).toMatch(/^Bearer realm="agent-passport", error="invalid_token", error_description="[^"\\]+", resource_metadata="([^"]+)"$/);
      // the metadata it names is this resource's
      const named = /resource_metadata="([^"]+)"/.exec(challenge)![1]!;
      expect(named).toBe(metadata);
      expect((await get(named)).body.resource).toBe(base);
    }
    // the token endpoint answers its Basic challenge on every invalid_client, Basic sent or not (RFC 6749 5.2)
    const noAuth = await post('/oauth/token', form({ grant_type: 'client_credentials' }), FORM);
    expect(noAuth.status).toBe(401);
    expect(noAuth.headers.get('www-authenticate')).toMatch(/^Basic realm="agent-passport"/);
  });

  it('/.well-known/oauth-protected-resource (RFC 9728), field by field', async () => {
    const r = await get('/.well-known/oauth-protected-resource');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    expect(r.body).toEqual({
      resource: base,
      authorization_servers: [base],
      jwks_uri: `${base}/oauth/jwks.json`,
      scopes_supported: ['registry'],
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: ['EdDSA'],
      resource_name: 'Agent Passport API',
      resource_documentation: `${base}/docs`,
    });
    const as = await get(`${r.body.authorization_servers[0]}/.well-known/oauth-authorization-server`);
    expect(as.body.issuer).toBe(r.body.authorization_servers[0]);
    expect((await get(r.body.resource_documentation)).status).toBe(200);
  });

  it('/.well-known/api-catalog (RFC 9727): a linkset with OpenAPI, docs and status, each answering', async () => {
    const r = await get('/.well-known/api-catalog');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/linkset\+json; profile="https:\/\/www\.rfc-editor\.org\/info\/rfc9727"(; charset=utf-8)?$/);
    expect(r.headers.get('link')).toBe(`<${base}/.well-known/api-catalog>; rel="api-catalog"`);
    expect(Object.keys(r.body)).toEqual(['linkset']);
    expect(r.body.linkset).toHaveLength(1);
    const set = r.body.linkset[0];
    expect(set.anchor).toBe(`${base}/`);
    expect(Object.keys(set).sort()).toEqual(['anchor', 'service-desc', 'service-doc', 'status']);
    const openapi = await get(set['service-desc'][0].href);
    expect(openapi.status).toBe(200);
    expect(openapi.body.openapi).toBe('3.1.0');
    expect(Object.keys(openapi.body.paths)).toEqual(expect.arrayContaining(['/api/v1/agents/register', '/api/v1/agents/me', '/oauth/token']));
    const docs = await fetch(set['service-doc'][0].href);
    expect(docs.status).toBe(200);
    expect(docs.headers.get('content-type')).toMatch(/text\/html/);
    const status = await get(set.status[0].href);
    expect(status.status).toBe(200);
    const head = await fetch(`${base}/.well-known/api-catalog`, { method: 'HEAD' });
    expect(head.status).toBe(200);
  });

  it('/.well-known/webfinger (RFC 7033): JRD of a DID; 404 unknown; 400 without resource', async () => {
    let r = await get(`/.well-known/webfinger?resource=${encodeURIComponent(did)}`);
    for (let i = 0; i < 100 && r.body.links?.length !== 4; i++) {
      await new Promise((resolve) => setTimeout(resolve, 50)); // the passport NOTIFY reaches the cache asynchronously
      r = await get(`/.well-known/webfinger?resource=${encodeURIComponent(did)}`);
    }
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/jrd\+json/);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
    expect(r.body).toEqual({
      subject: did,
      links: [
        { rel: 'describedby', href: `${base}/did/${did}`, type: 'application/did+json' },
        { rel: 'urn:agent-passport:rel:passport', href: `${base}/passport/${tokenId}/${serial}`, type: 'application/json' },
        { rel: 'urn:agent-passport:rel:directory-entry', href: `${base}/agents/${encodeURIComponent(did)}`, type: 'application/json' },
        { rel: 'urn:agent-passport:rel:agent-card', href: 'https://agent.example/.well-known/agent-card.json', type: 'application/json' },
      ],
    });
    const filtered = await get(`/.well-known/webfinger?resource=${encodeURIComponent(did)}&rel=describedby`);
    expect(filtered.body.links.map((l: { rel: string }) => l.rel)).toEqual(['describedby']);

    for (const unknown of ['did:hedera:local:0.0.999999991', 'acct:someone@example.com', 'did:hedera:mainnet:0.0.5']) {
      const u = await get(`/.well-known/webfinger?resource=${encodeURIComponent(unknown)}`);
      expect(u.status, unknown).toBe(404);
      expect(u.body.code).toBe('agent_not_found');
    }
    const missing = await get('/.well-known/webfinger');
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('invalid_request');
    expect((await get('/.well-known/webfinger?resource=')).status).toBe(400);
  });

  it('/.well-known/agent-card.json: the A2A v1.0 card of the service', async () => {
    const r = await get('/.well-known/agent-card.json');
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^application\/json/);
    const card = r.body;
    for (const field of ['name', 'description', 'version']) expect(typeof card[field], field).toBe('string');
    expect(card.supportedInterfaces.length).toBeGreaterThan(0);
    for (const i of card.supportedInterfaces) {
      expect(Object.keys(i).sort()).toEqual(['protocolBinding', 'protocolVersion', 'url']);
      expect((await get(i.url)).status).toBe(200);
    }
    expect(card.capabilities).toEqual({ streaming: false, pushNotifications: false });
    expect(card.defaultInputModes).toEqual(['application/json']);
    expect(card.defaultOutputModes).toEqual(['application/json']);
    expect(card.skills.length).toBeGreaterThan(0);
    for (const s of card.skills) {
      for (const field of ['id', 'name', 'description']) expect(typeof s[field]).toBe('string');
      expect(s.tags.length).toBeGreaterThan(0);
    }
    expect(new Set(card.skills.map((s: { id: string }) => s.id)).size).toBe(card.skills.length);
    expect(card.securitySchemes.oauth.oauth2SecurityScheme.flows.clientCredentials.tokenUrl).toBe(`${base}/oauth/token`);
    expect((await get(card.securitySchemes.oauth.oauth2SecurityScheme.oauth2MetadataUrl)).status).toBe(200);
    expect((await get(card.documentationUrl)).status).toBe(200);
  });

  it('/.well-known/agent-card.json is signed (A2A v1.0 section 8.4): the @a2a-js/sdk verifier accepts it with the key of the signature directory, and refuses a tampered copy', async () => {
    const card = (await get('/.well-known/agent-card.json')).body;
    expect(card.signatures).toHaveLength(1);
    const header = decodeProtectedHeader(card.signatures[0]);
    expect(header).toMatchObject({ alg: 'EdDSA', typ: 'JOSE', jku: `${base}/.well-known/http-message-signatures-directory` });
    const directory = (await get('/.well-known/http-message-signatures-directory')).body;
    expect(directory.keys.map((k: { kid: string }) => k.kid)).toContain(header.kid);
    // the verifier fetches the key the way a client would: from the jku, by kid
    const asked: string[] = [];
    const verify = verifyAgentCardSignature(async (kid, jku) => {
      asked.push(`${kid} ${jku}`);
      const jwks = (await get(jku!)).body as { keys: (JWK & { kid: string })[] };
      const jwk = jwks.keys.find((k) => k.kid === kid);
      if (!jwk) throw new Error(`no key ${kid}`);
      return jwk;
    });
    await expect(verify(card)).resolves.toBeUndefined();
    expect(asked).toEqual([`${header.kid} ${base}/.well-known/http-message-signatures-directory`]);
    // the signed payload is the RFC 8785 form of the whole card, which is also the SDK's schema form
    const { signatures: _s, ...unsigned } = card;
    expect(canonicalizeAgentCard(card)).toBe(canonicalize(unsigned));
    await expect(verify({ ...card, description: `${card.description} (changed)` })).rejects.toThrow(/No valid signatures/);
    await expect(verify({ ...card, skills: card.skills.slice(1) })).rejects.toThrow(/No valid signatures/);
  });
});

describe('discovery without PostgreSQL (no registry)', () => {
  it('names no OAuth endpoint that would not exist: no OAuth metadata, an agent card without key schemes', async () => {
    const app = await buildTestApp({ RATE_LIMIT_MAX: '100000' });
    try {
      for (const path of ['/.well-known/oauth-authorization-server', '/.well-known/oauth-protected-resource', '/oauth/token', '/api/v1/agents/register']) {
        const r = await app.inject({ method: path.startsWith('/.well') ? 'GET' : 'POST', url: path });
        expect(r.statusCode, path).toBe(404);
      }
      const card = (await app.inject('/.well-known/agent-card.json')).json();
      expect(card.securitySchemes).toBeUndefined();
      expect(card.skills.map((s: { id: string }) => s.id)).not.toContain('registry');
      expect((await app.inject('/.well-known/api-catalog')).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});
