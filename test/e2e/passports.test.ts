// Passports end to end over HTTP: real signatures, a real @x402/fetch client paying localnet HBAR,
// the real workflows on a Temporal worker, localnet's mirror as the judge of the ledger state.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodePassportMetadata } from '../../domain/passportMetadata.js';
import { tierEntry, TIERS, type Tier } from '../../domain/tiers.js';
import { findPaymentByTransactionId } from '../../db/queries/payments.js';
import type { TestAgent } from '../support/signing.js';
import { ADMIN_TOKEN, getJson, paidPost, recordFixture, signedPost, startPassportStack, type PassportStack } from './passportHarness.js';

const HBAR = 100_000_000n;

describe('passports end to end (x402 on localnet, Temporal workflows)', () => {
  let ps: PassportStack;
  let agents: TestAgent[];
  const issued = new Map<string, { tokenId: string; serialNumber: number; tier: Tier }>();
  let goldPayment: string | null = null;

  const balance = async (accountId: string) => (await ps.stack.ledger.mirror.getHbarBalance(accountId))!;
  const nftsOf = (accountId: string) => ps.stack.ledger.mirror.getAccountNfts(accountId, { tokenId: ps.stack.deployment.passportTokenId });
  const metadataOf = async (accountId: string) => {
    const nfts = await nftsOf(accountId);
    expect(nfts).toHaveLength(1);
    return { serial: nfts[0].serial_number, meta: decodePassportMetadata(Buffer.from(nfts[0].metadata, 'base64')) };
  };
  const auditOf = async (tokenId: string, serial: number) => (await getJson(ps, `/audit/${tokenId}/${serial}`)).body.events as Record<string, any>[];

  beforeAll(async () => {
    ps = await startPassportStack('passports');
    await ps.startWorker();
    agents = ps.agents;
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('refuses before any payment: 401 without signature headers, 400 for bad tiers or capabilities, 402 with the terms', async () => {
    const noAuth = await fetch(`${ps.baseUrl}/passport/request`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ tier: 'bronze' }) });
    expect(noAuth.status).toBe(401);
    expect(((await noAuth.json()) as { code: string }).code).toBe('auth_header_missing');

    const badTier = await signedPost(ps, agents[0], '/passport/request', { tier: 'diamond' });
    expect([badTier.status, badTier.body.code]).toEqual([400, 'passport_tier_invalid']);
    const badCaps = await signedPost(ps, agents[0], '/passport/request', { tier: 'bronze', capabilities: ['orchestration'] });
    expect([badCaps.status, badCaps.body.code]).toEqual([400, 'invalid_request']);
    const unknownField = await signedPost(ps, agents[0], '/passport/request', { tier: 'bronze', extra: 1 });
    expect([unknownField.status, unknownField.body.code]).toEqual([400, 'invalid_request']);
    const otherDid = await signedPost(ps, agents[0], '/passport/request', { did: agents[1].did, tier: 'bronze' });
    expect([otherDid.status, otherDid.body.code]).toEqual([403, 'auth_did_mismatch']);

    const unpaid = await signedPost(ps, agents[0], '/passport/request', { did: agents[0].did, tier: 'silver' });
    expect(unpaid.status).toBe(402);
    expect(unpaid.body).toMatchObject({ code: 'passport_payment_required', amount: 25, payTo: ps.stack.deployment.payTo, asset: 'HBAR' });
    expect(unpaid.headers.get('payment-required')).toBeTruthy();
  });

  it.each([
    [0, 'bronze'],
    [1, 'silver'],
    [2, 'gold'],
    [3, 'platinum'],
  ] as const)('agent %i buys %s: NFT delivered with its metadata, audit message, DID document', async (i, tier) => {
    const agent = agents[i];
    const before = await balance(agent.accountId);
    const endpoint = `https://agent-${i}.example.com/a2a`;
    const r = await paidPost(ps, agent, '/passport/request', { did: agent.did, tier, endpoint });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.headers.get('payment-response')).toBeTruthy();
    const { tokenId, serialNumber } = r.body;
    expect(r.body).toMatchObject({ tokenId: ps.stack.deployment.passportTokenId, did: agent.did, tier });
    expect(serialNumber).toBeGreaterThan(0);
    expect(r.body.hashScanLink).toBe(`${ps.baseUrl}/passport/${tokenId}/${serialNumber}`);
    expect(r.body._links.self.href).toBe(`/passport/${tokenId}/${serialNumber}`);
    issued.set(agent.accountId, { tokenId, serialNumber, tier });
    if (tier === 'gold') goldPayment = r.paymentSignature;

    // paid exactly the tier price (the facilitator paid the fee)
    expect(before - (await balance(agent.accountId))).toBe(BigInt(tierEntry(tier).price) * HBAR);
    // the NFT is in the owner's account and its metadata decodes to the tier and capabilities
    const { serial, meta } = await metadataOf(agent.accountId);
    expect(serial).toBe(serialNumber);
    expect(meta).toEqual({ tier, capabilities: expect.arrayContaining([...tierEntry(tier).capabilities]) });
    expect(meta!.capabilities).toHaveLength(tierEntry(tier).capabilities.length);
    // the audit topic holds passport.issued
    const events = await auditOf(tokenId, serialNumber);
    expect(events).toEqual([expect.objectContaining({ type: 'passport.issued', did: agent.did, tokenId, serial: serialNumber, tier })]);
    // the DID document resolves with the account key in the right key type and the endpoint
    const did = await getJson(ps, `/did/${agent.did}`);
    expect(did.status).toBe(200);
    expect(did.body).toMatchObject({ id: agent.did, controller: agent.did, authentication: [`${agent.did}#key-1`] });
    expect(did.body.verificationMethod[0].type).toBe(agent.keyType === 'ED25519' ? 'Ed25519VerificationKey2020' : 'EcdsaSecp256k1VerificationKey2019');
    expect(did.body.service).toEqual(expect.arrayContaining([{ id: `${agent.did}#agent`, type: 'AgentService', serviceEndpoint: endpoint }]));
    // the projection
    const p = await getJson(ps, `/passport/${tokenId}/${serialNumber}`);
    expect(p.body).toMatchObject({ active: true, tokenId, serialNumber, tier, did: agent.did, owner: agent.accountId, endpoint });
    if (i === 0) await recordFixture(ps, ps.workflowId(`passport:local:${agent.accountId}`), 'passportIssuance');
  });

  it('a second purchase for the same wallet gives 409 before any payment', async () => {
    const agent = agents[0];
    const before = await balance(agent.accountId);
    const r = await paidPost(ps, agent, '/passport/request', { tier: 'gold' });
    expect([r.status, r.body.code]).toEqual([409, 'passport_already_exists']);
    expect(r.paymentSignature).toBeNull();
    expect(await balance(agent.accountId)).toBe(before);
  });

  it('a replayed payment is refused; the payer retrying with it gets the same passport, charged once', async () => {
    expect(goldPayment).toBeTruthy();
    const owner = agents[2];
    const thief = agents[5];
    const ownerBefore = await balance(owner.accountId);
    const replay = await signedPost(ps, thief, '/passport/request', { tier: 'gold' }, { 'payment-signature': goldPayment! });
    expect([replay.status, replay.body.code]).toEqual([400, 'passport_payment_failed']);
    expect(await nftsOf(thief.accountId)).toHaveLength(0);

    const retry = await signedPost(ps, owner, '/passport/request', { tier: 'gold' }, { 'payment-signature': goldPayment! });
    expect(retry.status).toBe(200);
    expect(retry.body).toMatchObject(issued.get(owner.accountId)!);
    expect(await balance(owner.accountId)).toBe(ownerBefore);
    expect(await nftsOf(owner.accountId)).toHaveLength(1);
  });

  it('upgrade bronze -> gold rewrites the metadata in place and charges exactly the difference', async () => {
    const agent = agents[0];
    const { tokenId, serialNumber } = issued.get(agent.accountId)!;
    const before = await balance(agent.accountId);
    const r = await paidPost(ps, agent, `/passport/${tokenId}/${serialNumber}/upgrade`, { did: agent.did, tier: 'gold' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ upgraded: true, tokenId, serialNumber, oldTier: 'bronze', newTier: 'gold', tier: 'gold' });
    expect(before - (await balance(agent.accountId))).toBe(95n * HBAR);
    const { serial, meta } = await metadataOf(agent.accountId);
    expect(serial).toBe(serialNumber);
    expect(meta?.tier).toBe('gold');
    expect(meta?.capabilities).toEqual(expect.arrayContaining([...tierEntry('gold').capabilities]));
    const events = await auditOf(tokenId, serialNumber);
    expect(events.map((e) => e.type)).toEqual(['passport.issued', 'passport.upgraded']);
    expect(events[1]).toMatchObject({ oldTier: 'bronze', newTier: 'gold', did: agent.did });
    expect((await getJson(ps, `/passport/${tokenId}/${serialNumber}`)).body.tier).toBe('gold');
    expect((await getJson(ps, `/did/${agent.did}`)).body.passport.tier).toBe('gold');
    await recordFixture(ps, ps.workflowId(`passport-upgrade:${tokenId}:${serialNumber}:gold`), 'passportUpgrade');
  });

  it('upgrade refusals: lower or same tier 400, unknown tier 400, someone else\'s passport 403, missing 404', async () => {
    const agent = agents[0];
    const { tokenId, serialNumber } = issued.get(agent.accountId)!;
    const before = await balance(agent.accountId);
    const lower = await paidPost(ps, agent, `/passport/${tokenId}/${serialNumber}/upgrade`, { tier: 'silver' });
    expect([lower.status, lower.body.code, lower.paymentSignature]).toEqual([400, 'passport_upgrade_not_eligible', null]);
    const same = await paidPost(ps, agent, `/passport/${tokenId}/${serialNumber}/upgrade`, { tier: 'gold' });
    expect([same.status, same.body.code]).toEqual([400, 'passport_upgrade_not_eligible']);
    const unknown = await signedPost(ps, agent, `/passport/${tokenId}/${serialNumber}/upgrade`, { tier: 'diamond' });
    expect([unknown.status, unknown.body.code]).toEqual([400, 'passport_tier_invalid']);
    const other = await paidPost(ps, agents[5], `/passport/${tokenId}/${serialNumber}/upgrade`, { tier: 'platinum' });
    expect([other.status, other.body.code, other.paymentSignature]).toEqual([403, 'passport_not_owned', null]);
    const missing = await signedPost(ps, agent, `/passport/${tokenId}/99999/upgrade`, { tier: 'platinum' });
    expect([missing.status, missing.body.code]).toEqual([404, 'passport_not_found']);
    expect(await balance(agent.accountId)).toBe(before);
  });

  it('reads: by address, by id, lists by tokenId or env, bad ids, DIDs, x402 discovery', async () => {
    const tokenId = ps.stack.deployment.passportTokenId;
    const a0 = issued.get(agents[0].accountId)!;
    const byAddress = await getJson(ps, `/passport/address/${agents[0].accountId}`);
    expect(byAddress.status).toBe(200);
    expect(byAddress.body.passports).toEqual([expect.objectContaining({ active: true, tokenId, serialNumber: a0.serialNumber, owner: agents[0].accountId })]);
    expect((await getJson(ps, '/passport/address/not-an-account')).status).toBe(400);

    const byToken = await getJson(ps, `/passports?tokenId=${tokenId}&limit=2`);
    expect(byToken.body).toMatchObject({ count: 2, limit: 2, offset: 0 });
    expect(byToken.body.total).toBeGreaterThanOrEqual(4);
    const byEnv = await getJson(ps, '/passports?env=local&limit=100');
    expect(byEnv.body.total).toBe(byToken.body.total);
    expect((await getJson(ps, '/passports?env=mainnet')).body.total).toBe(0);
    expect((await getJson(ps, '/passports')).status).toBe(400);
    expect((await getJson(ps, '/passports?env=moon')).status).toBe(400);

    expect((await getJson(ps, `/passport/abc/1`)).body.code).toBe('invalid_request');
    expect((await getJson(ps, `/passport/${tokenId}/0`)).status).toBe(400);
    const missing = await getJson(ps, `/passport/${tokenId}/424242`);
    expect([missing.status, missing.body.code]).toEqual([404, 'passport_not_found']);

    expect((await getJson(ps, '/did/did:web:example.com')).status).toBe(400);
    expect((await getJson(ps, `/did/${agents[5].did}`)).status).toBe(404);

    const x402 = await getJson(ps, '/.well-known/x402.json');
    expect(x402.body).toMatchObject({
      url: ps.stack.deployment.facilitatorUrl,
      network: 'hedera:local',
      scheme: 'exact',
      asset: 'HBAR',
      payTo: ps.stack.deployment.payTo,
      feePayer: ps.stack.localnet.config.facilitator.feePayer,
    });
  });

  it('two concurrent requests for one wallet: one passport, one payment kept (the other refused before settling or refunded)', async () => {
    const agent = agents[4];
    const before = await balance(agent.accountId);
    const [a, b] = await Promise.all([
      paidPost(ps, agent, '/passport/request', { tier: 'bronze' }),
      paidPost(ps, agent, '/passport/request', { tier: 'bronze' }),
    ]);
    const statuses = [a.status, b.status].sort();
    expect(statuses, JSON.stringify([a.body, b.body])).toEqual([200, 409]);
    const loser = a.status === 409 ? a : b;
    expect(loser.body.code).toBe('passport_already_exists');
    if (loser.body.paymentTransactionId) {
      expect(loser.body.refund).toBe('refunded');
      expect((await findPaymentByTransactionId(ps.sql, loser.body.paymentTransactionId))?.status).toBe('refunded');
    }
    expect(await nftsOf(agent.accountId)).toHaveLength(1);
    expect(before - (await balance(agent.accountId))).toBe(5n * HBAR);
    const settled = await ps.sql`select status from payments where payer = ${agent.accountId}`;
    expect(settled.filter((p) => p.status === 'settled')).toHaveLength(1);
  });

  it('admin revoke wipes the NFT, the DID answers 404, a second revoke 409', async () => {
    const agent = agents[1];
    const { tokenId, serialNumber } = issued.get(agent.accountId)!;
    const post = (headers: Record<string, string>, body: unknown) =>
      fetch(`${ps.baseUrl}/admin/revoke`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const auth = { authorization: `Bearer ${ADMIN_TOKEN}` };
    expect((await post({}, { tokenId, serial: serialNumber })).status).toBe(401);
    expect((await post({ authorization: 'Bearer wrong' }, { tokenId, serial: serialNumber })).status).toBe(403);
    expect((await post(auth, { tokenId, serial: 'x' })).status).toBe(400);
    const missing = await post(auth, { tokenId, serial: 424242 });
    expect(missing.status).toBe(404);

    const res = await post(auth, { tokenId, serial: serialNumber, reason: 'policy violation' });
    const body = (await res.json()) as Record<string, any>;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ revoked: true, tokenId, serialNumber, did: agent.did, reason: 'policy violation' });
    expect(await nftsOf(agent.accountId)).toHaveLength(0);
    expect((await ps.stack.ledger.mirror.getNft(tokenId, serialNumber))?.deleted).toBe(true);
    const did = await getJson(ps, `/did/${agent.did}`);
    expect([did.status, did.body.code]).toEqual([404, 'passport_not_found']);
    expect((await getJson(ps, `/passport/${tokenId}/${serialNumber}`)).status).toBe(404);
    const upgrade = await signedPost(ps, agent, `/passport/${tokenId}/${serialNumber}/upgrade`, { tier: 'platinum' });
    expect(upgrade.status).toBe(404);
    const events = await auditOf(tokenId, serialNumber);
    expect(events.map((e) => e.type)).toEqual(['passport.issued', 'passport.revoked']);
    expect(events[1]).toMatchObject({ reason: 'policy violation', did: agent.did });

    const again = await post(auth, { tokenId, serial: serialNumber });
    expect(again.status).toBe(409);
    expect(((await again.json()) as { code: string }).code).toBe('passport_already_revoked');
    await recordFixture(ps, ps.workflowId(`passport-revoke:${tokenId}:${serialNumber}`), 'passportRevoke');
  });

  it('every tier of the catalog was sold', () => {
    expect([...issued.values()].map((p) => p.tier).sort()).toEqual([...TIERS].sort());
  });
});
