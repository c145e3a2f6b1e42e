// packages/client against the real stack (localnet, Temporal worker, PostgreSQL, the API on a port):
// every operation the client offers, as an agent developer uses it. The typed openapi-fetch calls are
// checked by tsc at compile time against the generated schema (a wrong path, parameter or field
// name fails `npm test`'s type-check).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AgentPassportClient, ApiRequestError, buildSignedA2aMessage, createApiClient, signInHeaders, type paths } from '@agent-passport/client';
import { hbarToTinybars, payoutOf } from '../../domain/market.js';
import { startPassportStack, upgradePassportTo, type PassportStack } from './passportHarness.js';
import type { TestAgent } from '../support/signing.js';

type Json = Record<string, any>;

describe('packages/client against the real stack', () => {
  let ps: PassportStack;
  let alice: TestAgent; // ED25519: poster
  let bob: TestAgent; // ECDSA: claimer
  let a: AgentPassportClient;
  let b: AgentPassportClient;
  let anon: AgentPassportClient;
  const progress: string[] = [];
  let passport: Json;

  beforeAll(async () => {
    ps = await startPassportStack('client');
    await ps.startWorker();
    alice = ps.agents.find((x) => x.keyType === 'ED25519')!;
    bob = ps.agents.find((x) => x.keyType === 'ECDSA')!;
    const common = { baseUrl: ps.baseUrl, nodeAccountId: ps.stack.localnet.config.node.accountId, a2aTopicId: ps.stack.deployment.topics.a2a };
    a = new AgentPassportClient({ ...common, agent: alice, onProgress: (l) => progress.push(l) });
    b = new AgentPassportClient({ ...common, agent: bob });
    anon = new AgentPassportClient({ baseUrl: ps.baseUrl });
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('typed reads with openapi-fetch: catalog, a 404 error body, the DID document', async () => {
    const api = createApiClient(ps.baseUrl);
    const cat = await api.GET('/catalog');
    expect(cat.response.status).toBe(200);
    const names: string[] = (cat.data ?? []).map((t) => t.name);
    expect(names).toEqual(['bronze', 'silver', 'gold', 'platinum']);
    const missing = await api.GET('/passport/{tokenId}/{serial}', { params: { path: { tokenId: ps.stack.deployment.passportTokenId, serial: '999999' } } });
    expect(missing.response.status).toBe(404);
    expect(missing.error?.code).toBeTypeOf('string');
    // a body of the wrong shape does not compile: @ts-expect-error proves the types are checked
    // @ts-expect-error tier is required in a passport request
    const _typed: paths['/passport/request']['post']['requestBody']['content']['application/json'] = { endpoint: 'https://a.example' };
    expect(_typed).toBeDefined();
  });

  it('sign-in: the three X-Service-* headers verify (a signed route accepts them, a wrong key is refused)', async () => {
    const h = await a.signIn();
    expect(Object.keys(h).sort()).toEqual(['x-service-challenge', 'x-service-did', 'x-service-signature']);
    expect(h['x-service-did']).toBe(alice.did);
    expect(JSON.stringify(h)).not.toContain(alice.privateKey);
    // alice's DID signed with bob's key: 401 from a signed route
    const forged = await signInHeaders(ps.baseUrl, { did: alice.did, privateKey: bob.privateKey, keyType: bob.keyType });
    const r = await fetch(`${ps.baseUrl}/agents/register`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...forged },
      body: JSON.stringify({ did: alice.did, name: 'forged', capabilities: ['api_call'], endpoint: 'https://a.example/a2a' }),
    });
    expect(r.status).toBe(401);
  });

  it('buys passports over x402 (HBAR leaves the payer), upgrades one, reads them back', async () => {
    const before = (await ps.stack.ledger.mirror.getHbarBalance(alice.accountId))!;
    passport = await a.buyPassport('bronze', 'https://alice.example/a2a');
    expect(passport).toMatchObject({ tokenId: ps.stack.deployment.passportTokenId, tier: 'bronze' });
    expect(progress.some((l) => l.includes('paying'))).toBe(true);
    expect((await ps.stack.ledger.mirror.getHbarBalance(alice.accountId))!).toBeLessThan(before - hbarToTinybars(5)! + 1n);
    const pb = await b.buyPassport('silver');
    expect(pb.tier).toBe('silver');

    const up = await a.upgradePassport(passport.tokenId, passport.serialNumber, 'silver');
    expect(up.tier).toBe('silver');
    const one = await anon.passport(passport.tokenId, passport.serialNumber);
    expect(one).toMatchObject({ tier: 'silver' });
    const owned = await anon.passportsOf(alice.accountId);
    expect((owned.passports as Json[]).some((p) => p.active && p.serialNumber === passport.serialNumber)).toBe(true);
    const doc = await anon.resolveDid(alice.did);
    expect(JSON.stringify(doc)).toContain(alice.did);
    const typed = await createApiClient(ps.baseUrl).GET('/did/{did}', { params: { path: { did: alice.did } } });
    expect(typed.response.status).toBe(200);
    expect(JSON.stringify(typed.data)).toContain(alice.accountId);
    expect((await anon.catalog()) as unknown as Json[]).toHaveLength(4);
  });

  it('a paid route beyond the payment cap is refused before paying', async () => {
    const capped = new AgentPassportClient({ baseUrl: ps.baseUrl, agent: alice, maxPaymentHbar: 1 });
    const before = (await ps.stack.ledger.mirror.getHbarBalance(alice.accountId))!;
    await expect(capped.upgradePassport(passport.tokenId, passport.serialNumber, 'gold')).rejects.toThrow();
    expect(await ps.stack.ledger.mirror.getHbarBalance(alice.accountId)).toBe(before);
  });

  it('directory: registers, lists, reads one, finds it by search', async () => {
    const entry = await a.register({ name: 'client-alice', capabilities: ['api_call'], endpoint: 'https://alice.example/a2a', skills: ['translation'] });
    expect(entry).toMatchObject({ did: alice.did, name: 'client-alice' });
    await expect.poll(async () => ((await anon.agents()).agents as Json[]).map((x) => x.did), { timeout: 20_000 }).toContain(alice.did);
    expect(await anon.agent(alice.did)).toMatchObject({ name: 'client-alice' });
    const found = await anon.search('client-alice');
    expect(JSON.stringify(found)).toContain(alice.did);
    // a second registration of the same DID: ApiRequestError with the SPEC error body
    const again = await a.register({ name: 'client-alice-2', capabilities: ['api_call'], endpoint: 'https://alice.example/a2a' }).catch((e) => e);
    expect(again).toBeInstanceOf(ApiRequestError);
    expect((again as ApiRequestError).status).toBe(409);
    expect((again as ApiRequestError).body.code).toBeTypeOf('string');
  });

  it('A2A: send-signed built and signed by the client; inbox and conversation read it back', async () => {
    const sent = await a.sendMessage(bob.did, 'hello from the client');
    expect(sent).toMatchObject({ from: alice.did, to: bob.did, body: 'hello from the client', chunks: 1 });
    const inbox = await b.inbox();
    expect((inbox.messages as Json[]).map((m) => m.body)).toContain('hello from the client');
    const conv = await anon.conversation(alice.did, bob.did);
    expect((conv.messages as Json[]).map((m) => m.id)).toContain(sent.id);
    // the bytes are exactly what the server checks: a copy for another recipient is refused
    const txBytes = await buildSignedA2aMessage({
      topicId: ps.stack.deployment.topics.a2a,
      nodeAccountId: ps.stack.localnet.config.node.accountId,
      payerAccountId: alice.accountId,
      privateKey: alice.privateKey,
      keyType: alice.keyType,
      message: { from: alice.did, to: bob.did, body: 'x' },
    });
    const h = await a.signIn();
    const r = await fetch(`${ps.baseUrl}/a2a/send-signed`, { method: 'POST', headers: { 'content-type': 'application/json', ...h }, body: JSON.stringify({ from: alice.did, to: alice.did, body: 'x', txBytes }) });
    expect(r.status).toBe(400);
  });

  it('marketplace: post, list, claim, deliver, complete (the claimer is paid by a transfer signed by the client); post and cancel', async () => {
    const price = 3;
    // set-up: the marketplace is for gold and platinum passports (SPEC 2 trust ladder)
    for (const x of [alice, bob]) await upgradePassportTo(ps, x, 'gold');
    const posted = await a.postTask({ title: 'client lifecycle task', priceHbar: price, capabilities: ['api_call'] });
    expect(posted).toMatchObject({ status: 'posted', posterDid: alice.did });
    const id = String(posted.taskId);
    await expect.poll(async () => ((await anon.tasks({ status: 'posted' })).tasks as Json[]).map((t) => t.taskId), { timeout: 20_000 }).toContain(id);
    expect(await anon.task(id)).toMatchObject({ taskId: id });
    expect(await b.claimTask(id)).toMatchObject({ status: 'claimed', claimerDid: bob.did });
    expect(await b.deliverTask(id, { resultBody: 'done' })).toMatchObject({ status: 'delivered' });
    const before = (await ps.stack.ledger.mirror.getHbarBalance(bob.accountId))!;
    const done = await a.completeTask(id);
    expect(done.status).toBe('completed');
    const { claimerTinybars } = payoutOf(hbarToTinybars(price)!, 250);
    expect(await ps.stack.ledger.mirror.getHbarBalance(bob.accountId)).toBe(before + claimerTinybars);

    const other = await a.postTask({ title: 'client task to cancel', priceHbar: 1 });
    expect(await a.cancelTask(String(other.taskId), 'changed my mind')).toMatchObject({ status: 'cancelled' });
  });

  it('trust snapshot: a domain that does not resolve answers the SPEC error as ApiRequestError', async () => {
    const err = await anon.trustSnapshot('client-test.invalid').catch((e) => e);
    expect(err).toBeInstanceOf(ApiRequestError);
    expect(err).toMatchObject({ status: 404, body: { code: 'trust_domain_not_found' } });
  });

  it('read-only client: a signing operation says a key is needed', async () => {
    await expect(anon.claimTask('x')).rejects.toThrow(/agent key/);
  });
});
