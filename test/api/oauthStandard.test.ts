// The OAuth faces of the service as a standard client sees them (issue 29 items 1 and 2), over real HTTP
// against real PostgreSQL, driven by oauth4webapi (a maintained OAuth 2 client): RFC 8414 discovery,
// RFC 9728 resource discovery, RFC 7591 dynamic client registration, the client credentials grant, a
// protected call, and the RFC 6750 challenge of a 401 it parses; then the registration endpoint's
// refusals (RFC 7591 3.2.2) and its per-IP cap, shared with POST /api/v1/agents/register.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import * as oauth from 'oauth4webapi';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { recordSecret } from '../support/secrets.js';

const insecure = { [oauth.allowInsecureRequests]: true };

describe('OAuth with a standard client (oauth4webapi)', () => {
  let sql: Sql;
  let app: FastifyInstance;
  /** the same service with a per-address cap of 3, called with injected addresses (the cap's tests) */
  let capped: FastifyInstance;
  let base: string;

  beforeAll(async () => {
    sql = createSql(inject('databaseUrl'), { max: 4 });
    // real-HTTP calls come from 127.0.0.1, which other files of the run register from too: no cap there
    app = await buildTestApp({ RATE_LIMIT_MAX: '100000', REGISTER_DAILY_CAP_PER_IP: '100000' }, { sql });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    capped = await buildTestApp({ RATE_LIMIT_MAX: '100000', REGISTER_DAILY_CAP_PER_IP: '3' }, { sql });
    await sql`delete from registry_keys where name like 'oauth4webapi-%'`;
  });
  afterAll(async () => {
    await app?.close();
    await capped?.close();
    await sql?.end();
  });

  /** a fresh address per test of the cap, so other tests' registrations never count */
  const ip = (n: number) => `192.0.2.${(process.pid % 50) * 5 + n}`;
  const registerAt = (address: string, body: object, url = '/oauth/register') => capped.inject({ method: 'POST', url, remoteAddress: address, payload: body });

  it('discovery, RFC 7591 registration, client credentials and a protected call, each through the library', async () => {
    const issuer = new URL(base);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }));
    expect(as.registration_endpoint).toBe(`${base}/oauth/register`);
    const rs = await oauth.processResourceDiscoveryResponse(issuer, await oauth.resourceDiscoveryRequest(issuer, insecure));
    expect(rs.authorization_servers).toEqual([as.issuer]);

    // RFC 7591: standard metadata in (an extension field it does not know is ignored), 201 with the client's information out
    const metadata = { client_name: `oauth4webapi-${process.pid}`, grant_types: ['client_credentials'], token_endpoint_auth_method: 'client_secret_basic', scope: 'registry', software_id: 'x-unknown' };
    const registration = await oauth.dynamicClientRegistrationRequest(as, metadata, insecure);
    expect(registration.status).toBe(201);
    expect(registration.headers.get('cache-control')).toBe('no-store');
    const client = await oauth.processDynamicClientRegistrationResponse(registration);
    recordSecret('oauth client secret', client.client_secret as string);
    expect(client).toMatchObject({ client_name: metadata.client_name, grant_types: ['client_credentials'], response_types: [], token_endpoint_auth_method: 'client_secret_basic', scope: 'registry', client_secret_expires_at: 0 });
    expect(client.client_secret).toMatch(/^apk_[A-Za-z0-9_-]{43}$/);
    expect(Math.abs((client.client_id_issued_at as number) - Date.now() / 1000)).toBeLessThan(600);
    expect(client).not.toHaveProperty('software_id');

    // the client credentials grant with the registered secret
    const tokenResponse = await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretBasic(client.client_secret as string), new URLSearchParams({ scope: 'registry' }), insecure);
    const tokens = await oauth.processClientCredentialsResponse(as, client, tokenResponse);
    recordSecret('oauth access token', tokens.access_token);
    expect(tokens.token_type).toBe('bearer');

    // the protected call: the registration record of this very client
    const me = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${base}/api/v1/agents/me`), undefined, undefined, insecure);
    expect(me.status).toBe(200);
    expect(await me.json()).toMatchObject({ id: client.client_id, name: metadata.client_name, status: 'active' });

    // revoked: the library sees the RFC 6750 challenge of the 401, with the resource metadata of RFC 9728
    expect((await fetch(`${base}/api/v1/agents/me`, { method: 'DELETE', headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(200);
    const refused = await oauth.protectedResourceRequest(tokens.access_token, 'GET', new URL(`${base}/api/v1/agents/me`), undefined, undefined, insecure).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(oauth.WWWAuthenticateChallengeError);
    const [challenge] = (refused as oauth.WWWAuthenticateChallengeError).cause;
    expect(challenge!.scheme).toBe('bearer');
    expect(challenge!.parameters).toMatchObject({ realm: 'agent-passport', error: 'invalid_token', resource_metadata: `${base}/.well-known/oauth-protected-resource` });
  });

  it('client_secret_post, and defaults for what the client leaves out', async () => {
    const issuer = new URL(base);
    const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer, { ...insecure, algorithm: 'oauth2' }));
    const client = await oauth.processDynamicClientRegistrationResponse(await oauth.dynamicClientRegistrationRequest(as, { token_endpoint_auth_method: 'client_secret_post' }, insecure));
    recordSecret('oauth client secret', client.client_secret as string);
    expect(client).toMatchObject({ client_name: 'oauth-client', grant_types: ['client_credentials'], scope: 'registry', token_endpoint_auth_method: 'client_secret_post' });
    const tokens = await oauth.processClientCredentialsResponse(as, client, await oauth.clientCredentialsGrantRequest(as, client, oauth.ClientSecretPost(client.client_secret as string), new URLSearchParams(), insecure));
    recordSecret('oauth access token', tokens.access_token);
    expect(tokens.scope).toBe('registry');
  });

  it('refuses what it does not offer with RFC 7591 3.2.2 errors carrying the catalog code', async () => {
    const cases: [object, string][] = [
      [{ grant_types: ['authorization_code'] }, 'invalid_client_metadata'],
      [{ grant_types: [] }, 'invalid_client_metadata'],
      [{ response_types: ['code'] }, 'invalid_client_metadata'],
      [{ token_endpoint_auth_method: 'none' }, 'invalid_client_metadata'],
      [{ token_endpoint_auth_method: 'private_key_jwt' }, 'invalid_client_metadata'],
      [{ scope: 'registry admin' }, 'invalid_client_metadata'],
      [{ client_name: 'x'.repeat(65) }, 'invalid_client_metadata'],
      [{ client_name: 'a\u0007b' }, 'invalid_client_metadata'],
      [{ client_name: 42 }, 'invalid_client_metadata'],
      [{ redirect_uris: ['https://client.example/cb'] }, 'invalid_redirect_uri'],
    ];
    for (const [body, error] of cases) {
      const r = await registerAt(ip(0), body);
      expect(r.statusCode, JSON.stringify(body)).toBe(400);
      expect(r.json()).toMatchObject({ error, code: 'invalid_request', retryable: false });
      expect(typeof r.json().error_description).toBe('string');
      expect(r.headers['cache-control']).toBe('no-store');
    }
    const notJson = await capped.inject({ method: 'POST', url: '/oauth/register', remoteAddress: ip(0), headers: { 'content-type': 'application/x-www-form-urlencoded' }, payload: 'client_name=x&grant_types=client_credentials' });
    expect(notJson.statusCode).toBe(400);
    expect(notJson.json().error).toBe('invalid_client_metadata');
    // none of the refusals took a place of the address's cap (3): three registrations still pass
    for (const n of [1, 2, 3]) {
      const r = await registerAt(ip(0), { client_name: `oauth4webapi-after-${n}` });
      expect(r.statusCode).toBe(201);
      recordSecret('oauth client secret', r.json().client_secret);
    }
  });

  it('shares the per-IP registration cap with POST /api/v1/agents/register', async () => {
    const address = ip(1);
    const made: string[] = [];
    const first = await registerAt(address, { name: `oauth4webapi-cap-a` }, '/api/v1/agents/register');
    expect(first.statusCode).toBe(200);
    made.push(first.json().api_key);
    for (const n of [1, 2]) {
      const r = await registerAt(address, { client_name: `oauth4webapi-cap-${n}` });
      expect(r.statusCode).toBe(201);
      made.push(r.json().client_secret);
    }
    for (const secret of made) recordSecret('registry api key', secret);
    const over = await registerAt(address, { client_name: 'oauth4webapi-cap-over' });
    expect(over.statusCode).toBe(429);
    expect(over.json()).toMatchObject({ code: 'register_rate_limited', retryable: true });
    expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
    const overSpec = await registerAt(address, { name: 'oauth4webapi-cap-over' }, '/api/v1/agents/register');
    expect(overSpec.statusCode).toBe(429);
    expect(overSpec.json().code).toBe('register_rate_limited');
  });
});
