// DID documents in their W3C DID 1.0 representations (issue 29 item 4), over real HTTP against real
// PostgreSQL and a localnet (the account keys come from its mirror): application/did+json by default,
// application/did+ld+json with @context when asked, application/json when asked by name; resolved
// through did-resolver (the DIF resolver interface) with a method resolver that fetches this route.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Resolver, type DIDDocument, type DIDResolutionOptions, type DIDResolutionResult, type ParsedDID } from 'did-resolver';
import { createSql, type Sql } from '../../db/client.js';
import { CHANNELS, notifyChange } from '../../db/notify.js';
import { passportKey } from '../../db/queries/passports.js';
import { buildTestApp } from '../support/app.js';
import { eventually } from '../support/eventually.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import type { TestAgent } from '../support/signing.js';

describe('DID documents as application/did+json (DID 1.0 representations)', () => {
  let stack: LedgerStack;
  let sql: Sql;
  let app: FastifyInstance;
  let base: string;
  let ed: TestAgent;
  let ecdsa: TestAgent;
  const tokenId = '0.0.977029';

  beforeAll(async () => {
    stack = await startLedgerStack('diddoc');
    sql = createSql(inject('databaseUrl'), { max: 3 });
    app = await buildTestApp({ ...stack.env, RATE_LIMIT_MAX: '100000' }, { sql, ledger: stack.ledger });
    base = await app.listen({ host: '127.0.0.1', port: 0 });
    const accounts = stack.localnet.config.accounts;
    ed = accounts.find((a) => a.keyType === 'ED25519')!;
    ecdsa = accounts.find((a) => a.keyType === 'ECDSA')!;
    // active passports written straight into the projection, as the passport workflow writes them
    for (const [i, agent] of [ed, ecdsa].entries()) {
      const serial = 1 + i + (process.pid % 1000) * 2;
      await sql`
        insert into passports (network, token_id, serial, account_id, did, tier, capabilities, issued_at, payment_transaction_id)
        values ('local', ${tokenId}, ${serial}, ${agent.accountId}, ${agent.did}, 'gold', ${sql.json(['api_call'])}, now(), ${`pay-did-${process.pid}-${i}`})
        on conflict do nothing`;
      await notifyChange(sql, CHANNELS.passport, passportKey(tokenId, serial));
    }
    // the passport cache learns of the rows through NOTIFY
    for (const agent of [ed, ecdsa]) expect((await eventually(() => getDid(agent.did), (r) => r.status === 200)).status).toBe(200);
  });
  afterAll(async () => {
    await app?.close();
    if (sql) await sql`delete from passports where token_id = ${tokenId}`.catch(() => {});
    await sql?.end();
    await stack?.stop();
  });

  const getDid = async (did: string, accept?: string) => {
    const res = await fetch(`${base}/did/${encodeURIComponent(did)}`, { headers: accept === undefined ? {} : { accept } });
    return { status: res.status, type: res.headers.get('content-type'), vary: res.headers.get('vary'), body: (await res.json()) as any };
  };

  it.each([
    ['no Accept', undefined],
    ['*/*', '*/*'],
    ['application/did+json', 'application/did+json'],
    ['a browser', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8'],
  ])('%s: application/did+json without @context', async (_name, accept) => {
    const r = await getDid(ed.did, accept);
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^application\/did\+json(;|$)/);
    expect(r.vary).toMatch(/accept/i);
    expect(r.body['@context']).toBeUndefined();
    expect(r.body).toMatchObject({ id: ed.did, controller: ed.did, authentication: [`${ed.did}#key-1`] });
    expect(r.body.verificationMethod[0]).toMatchObject({ type: 'Ed25519VerificationKey2020', controller: ed.did });
  });

  it('application/did+ld+json: the JSON-LD representation with @context', async () => {
    for (const [agent, suite] of [
      [ed, 'https://w3id.org/security/suites/ed25519-2020/v1'],
      [ecdsa, 'https://w3id.org/security/suites/secp256k1-2019/v1'],
    ] as const) {
      const r = await getDid(agent.did, 'application/did+ld+json');
      expect(r.status).toBe(200);
      expect(r.type).toMatch(/^application\/did\+ld\+json(;|$)/);
      expect(r.body['@context']).toEqual(['https://www.w3.org/ns/did/v1', suite]);
      expect(r.body.id).toBe(agent.did);
    }
    // the q-values decide
    const preferLd = await getDid(ed.did, 'application/did+json;q=0.5, application/did+ld+json');
    expect(preferLd.type).toMatch(/^application\/did\+ld\+json/);
  });

  it('application/json when asked by name: the JSON-LD body, as before', async () => {
    const r = await getDid(ed.did, 'application/json');
    expect(r.status).toBe(200);
    expect(r.type).toMatch(/^application\/json(;|$)/);
    expect(r.body['@context'][0]).toBe('https://www.w3.org/ns/did/v1');
    const { '@context': _ld, ...rest } = r.body;
    expect(rest).toEqual((await getDid(ed.did)).body);
  });

  it('errors stay the JSON error body whatever the Accept', async () => {
    const r = await getDid('did:hedera:local:0.0.999999', 'application/did+json');
    expect(r.status).toBe(404);
    expect(r.type).toMatch(/^application\/json/);
    expect(r.body.code).toBe('passport_not_found');
  });

  it('did-resolver resolves both keys through a method resolver over this route', async () => {
    const hedera = async (did: string, _parsed: ParsedDID, _r: unknown, options: DIDResolutionOptions): Promise<DIDResolutionResult> => {
      const res = await fetch(`${base}/did/${encodeURIComponent(did)}`, { headers: { accept: options.accept ?? 'application/did+json' } });
      const contentType = res.headers.get('content-type')?.split(';')[0];
      if (res.status !== 200) return { didResolutionMetadata: { error: 'notFound' }, didDocument: null, didDocumentMetadata: {} };
      return { didResolutionMetadata: { contentType }, didDocument: (await res.json()) as DIDDocument, didDocumentMetadata: {} };
    };
    const resolver = new Resolver({ hedera });
    for (const agent of [ed, ecdsa]) {
      const result = await resolver.resolve(agent.did);
      expect(result.didResolutionMetadata).toEqual({ contentType: 'application/did+json' });
      expect(result.didDocument?.id).toBe(agent.did);
      const method = result.didDocument!.verificationMethod![0]!;
      expect(method.publicKeyMultibase).toMatch(/^z[1-9A-HJ-NP-Za-km-z]+$/);
      // a DID URL with a fragment resolves to the same document (did-resolver parses the URL)
      expect((await resolver.resolve(`${agent.did}#key-1`)).didDocument?.id).toBe(agent.did);
      const ld = await resolver.resolve(agent.did, { accept: 'application/did+ld+json' });
      expect(ld.didResolutionMetadata.contentType).toBe('application/did+ld+json');
      expect((ld.didDocument as Record<string, unknown>)['@context']).toBeDefined();
    }
    expect((await resolver.resolve('did:hedera:local:0.0.999999')).didResolutionMetadata.error).toBe('notFound');
  });
});
