/**
 * Sign-in challenges name their audience (issue 19 item 6), against PostgreSQL and a localnet:
 * - the API names its public origin (PUBLIC_BASE_URL) and the purpose in every challenge, documents
 *   the form in /openapi.json, and refuses a signature over a challenge issued for another origin;
 * - the client (signInHeaders), the CLI (a process) and the stdio MCP server (a process) refuse to sign
 *   a challenge relayed from the real service by a phishing base URL, a text not of the documented
 *   form, a challenge for another DID, or an expired one; and sign a proper one.
 */
import http from 'node:http';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { ZodTypeProvider } from 'fastify-type-provider-zod';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createSql, type Sql } from '../../db/client.js';
import { buildTestApp } from '../support/app.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { signChallenge, signedHeaders, type TestAgent } from '../support/signing.js';
import { freePort } from '../../scripts/lib/ports.js';
import { CHALLENGE_FORM, formatChallenge, parseChallenge } from '@agent-passport/core/signInChallenge';
import { signInHeaders, UnsafeChallengeError } from '@agent-passport/client';

const root = path.join(import.meta.dirname, '..', '..');
type Json = Record<string, any>;

describe('sign-in challenges name the service they are for', () => {
  let stack: LedgerStack;
  let sql: Sql;
  /** the service at its public origin */
  let api: FastifyInstance;
  let apiOrigin: string;
  /** a second service on the same database, at another public origin */
  let other: FastifyInstance;
  /** what a phishing base URL (or a hostile server) answers the client */
  let relay: http.Server;
  let relayOrigin: string;
  let alice: TestAgent;
  let bob: TestAgent;

  /** A route guarded like the product routes, on an app. */
  const addWhoami = (app: FastifyInstance) =>
    app.withTypeProvider<ZodTypeProvider>().post(
      '/__test/whoami',
      { schema: { body: z.object({ did: z.string() }) }, preHandler: app.signedRequest((req) => (req.body as { did: string }).did) },
      async (req) => ({ did: req.auth!.did }),
    );

  beforeAll(async () => {
    stack = await startLedgerStack('signin');
    sql = createSql(inject('databaseUrl'), { max: 4 });
    [alice, bob] = stack.localnet.config.accounts;
    const port = await freePort();
    apiOrigin = `http://127.0.0.1:${port}`;
    api = await buildTestApp({ ...stack.env, PUBLIC_BASE_URL: `${apiOrigin}/` }, { sql, ledger: stack.ledger });
    addWhoami(api);
    await api.listen({ port, host: '127.0.0.1' });
    other = await buildTestApp({ ...stack.env, PUBLIC_BASE_URL: 'https://other-service.example' }, { sql, ledger: stack.ledger });
    addWhoami(other);

    // /relay/...: forwards to the real service (its challenge names the real origin);
    // /junk, /other-did, /expired: crafted answers; /proper: a well-formed challenge for this origin
    relay = http.createServer(async (req, res) => {
      const url = new URL(req.url ?? '/', 'http://relay');
      const [, mode] = url.pathname.split('/');
      const did = url.searchParams.get('did') ?? '';
      const origin = relayOrigin;
      const nonce = randomBytes(16).toString('hex');
      const soon = new Date(Date.now() + 300_000);
      let challenge: string;
      if (mode === 'relay') {
        const real = await fetch(`${apiOrigin}/auth/challenge?did=${encodeURIComponent(did)}`);
        challenge = ((await real.json()) as Json).challenge;
      } else if (mode === 'junk') challenge = `agent-passport wants you to sign in as ${did}; nonce ${nonce}; expires ${soon.toISOString()}`;
      else if (mode === 'other-did') challenge = formatChallenge({ origin, did: bob.did, nonce, expiresAt: soon });
      else if (mode === 'expired') challenge = formatChallenge({ origin, did, nonce, expiresAt: new Date(Date.now() - 600_000) });
      else challenge = formatChallenge({ origin, did, nonce, expiresAt: soon });
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge, expiresAt: soon.toISOString() }));
    });
    await new Promise<void>((resolve) => relay.listen(0, '127.0.0.1', resolve));
    relayOrigin = `http://127.0.0.1:${(relay.address() as { port: number }).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => relay?.close(resolve));
    await other?.close();
    await api?.close();
    await sql?.end();
    await stack?.stop();
  });

  describe('the API', () => {
    it('names its public origin, the purpose and the DID, in the documented form', async () => {
      const res = await fetch(`${apiOrigin}/auth/challenge?did=${alice.did}`);
      expect(res.status).toBe(200);
      const { challenge } = (await res.json()) as Json;
      expect(challenge.startsWith(`For ${apiOrigin} only; purpose agent-passport sign-in; did ${alice.did}; nonce `)).toBe(true);
      expect(parseChallenge(challenge)).toMatchObject({ origin: apiOrigin, did: alice.did });
      // whatever Host the request names: the public origin
      const spoofed = await api.inject({ url: `/auth/challenge?did=${alice.did}`, headers: { host: 'phish.example' } });
      expect(parseChallenge(spoofed.json().challenge)?.origin).toBe(apiOrigin);
    });

    it('documents the form in the OpenAPI description of GET /auth/challenge', async () => {
      const doc = (await (await fetch(`${apiOrigin}/openapi.json`)).json()) as Json;
      const description = doc.paths['/auth/challenge'].get.description as string;
      expect(description).toContain(CHALLENGE_FORM);
      expect(description).toContain('Clients must refuse to sign');
    });

    it('refuses a signature over a challenge issued for another origin, and leaves the challenge to its own service', async () => {
      const headers = await signedHeaders(other, alice, { origin: 'https://other-service.example' });
      const refused = await api.inject({ method: 'POST', url: '/__test/whoami', headers, payload: { did: alice.did } });
      expect(refused.statusCode).toBe(401);
      expect(refused.json()).toMatchObject({ code: 'auth_challenge_origin_mismatch' });
      expect(refused.json().hint).toContain(apiOrigin);
      // the service it was issued for still accepts it (it was not used up)
      const ok = await other.inject({ method: 'POST', url: '/__test/whoami', headers, payload: { did: alice.did } });
      expect(ok.statusCode, ok.body).toBe(200);
      // and its own challenges work
      const own = await signedHeaders(api, alice, { origin: apiOrigin });
      expect((await api.inject({ method: 'POST', url: '/__test/whoami', headers: own, payload: { did: alice.did } })).statusCode).toBe(200);
    });

    it('refuses a text that is not a challenge of the documented form, even signed', async () => {
      const text = 'x';
      const res = await api.inject({ method: 'POST', url: '/__test/whoami', headers: { 'x-service-did': alice.did, 'x-service-challenge': text, 'x-service-signature': signChallenge(alice, text) }, payload: { did: alice.did } });
      expect(res.statusCode).toBe(401);
      expect(res.json().code).toBe('auth_challenge_expired');
    });
  });

  describe('the client, the CLI and the MCP tools', () => {
    const cases: [string, RegExp][] = [
      ['relay', /the challenge is for http:\/\/127\.0\.0\.1:\d+, not for http:\/\/127\.0\.0\.1:\d+, the service called/],
      ['junk', /not of the documented form/],
      ['other-did', /names did:hedera:local:\S+, not the signer/],
      ['expired', /the challenge expired/],
    ];

    it.each(cases)('the client refuses to sign: %s', async (mode, reason) => {
      const err = await signInHeaders(`${relayOrigin}/${mode}`, alice).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(UnsafeChallengeError);
      expect((err as Error).message).toMatch(reason);
    });

    it('the client signs a proper challenge for the origin it called (and the real service directly)', async () => {
      const headers = await signInHeaders(`${relayOrigin}/proper`, alice);
      expect(parseChallenge(headers['x-service-challenge']!)?.origin).toBe(relayOrigin);
      const real = await signInHeaders(apiOrigin, alice);
      const res = await fetch(`${apiOrigin}/__test/whoami`, { method: 'POST', headers: { 'content-type': 'application/json', ...real }, body: JSON.stringify({ did: alice.did }) });
      expect(res.status).toBe(200);
    });

    const cli = (args: string[], env: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> =>
      new Promise((resolve) => {
        execFile(process.execPath, [path.join(root, 'packages', 'client', 'bin', 'agent-passport.mjs'), ...args], { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, timeout: 60_000 }, (err, stdout, stderr) =>
          resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });

    it.each(cases)('the CLI refuses to sign in: %s', async (mode, reason) => {
      const r = await cli(['--url', `${relayOrigin}/${mode}`, 'sign-in'], { AGENT_PRIVATE_KEY: alice.privateKey, AGENT_ACCOUNT_ID: alice.accountId, AGENT_KEY_TYPE: alice.keyType });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/refusing to sign/);
      expect(r.stderr).toMatch(reason);
      expect(r.stdout).not.toMatch(/x-service-signature/i);
    });

    it('the stdio MCP server refuses to sign for a signing tool, and signs nothing', async () => {
      for (const [mode, reason] of cases) {
        const mcp = new McpClient({ name: 'signin-test', version: '1.0.0' });
        await mcp.connect(
          new StdioClientTransport({
            command: process.execPath,
            args: [path.join(root, 'packages', 'client', 'bin', 'agent-passport-mcp.mjs')],
            cwd: root,
            stderr: 'pipe',
            env: {
              PATH: process.env.PATH ?? '',
              AGENT_PASSPORT_URL: `${relayOrigin}/${mode}`,
              AGENT_ACCOUNT_ID: alice.accountId,
              AGENT_PRIVATE_KEY: alice.privateKey,
              AGENT_KEY_TYPE: alice.keyType,
              LOCALNET_CONFIG_PATH: path.join(root, 'no-such-deployment.json'),
            },
          }),
        );
        try {
          const r = (await mcp.callTool({ name: 'claim_task', arguments: { taskId: '0190a0a0-0000-7000-8000-000000000000' } })) as { isError?: boolean; content: { text: string }[] };
          expect(r.isError, mode).toBe(true);
          expect(r.content[0]!.text).toMatch(/refusing to sign/);
          expect(r.content[0]!.text).toMatch(reason);
        } finally {
          await mcp.close();
        }
      }
    });
  });
});
