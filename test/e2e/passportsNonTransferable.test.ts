// Passports are identity, not property (DESIGN.md section 10): after delivery the holder's
// relationship with the collection is frozen, so a transfer the holder builds and signs with the SDK
// fails on the ledger; revocation unfreezes then wipes; the upgrade route asks the ledger (not
// PostgreSQL) who holds the passport.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccountId, NftId, PrivateKey, TokenCreateTransaction, TokenId, TokenMintTransaction, TokenType, TransferTransaction, type Client } from '@hashgraph/sdk';
import { decodePassportMetadata, encodePassportMetadata } from '../../domain/passportMetadata.js';
import { createLedgerClient } from '../../ledger/client.js';
import { LedgerError } from '../../ledger/errors.js';
import { freezeAccount, wipeNft } from '../../ledger/operations.js';
import { MirrorClient } from '../../ledger/mirror.js';
import { findPassport } from '../../db/queries/passports.js';
import { buildTestApp } from '../support/app.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { ADMIN_TOKEN, getJson, paidPost, signedPost, startPassportStack, type PassportStack } from './passportHarness.js';
import { MockActivityEnvironment } from '@temporalio/testing';
import { randomUUID } from 'node:crypto';
import { tierEntry } from '../../domain/tiers.js';

describe('passports are non-transferable (frozen holder, ownership read from the ledger)', () => {
  let ps: PassportStack;
  let agents: TestAgent[];
  let tokenId: string;
  const holderClients: Client[] = [];

  /** An SDK client paying and signing as the agent itself (the holder acting on its own). */
  const clientOf = (agent: TestAgent): Client => {
    const c = createLedgerClient({ network: 'local', node: ps.stack.localnet.config.node, operator: { accountId: agent.accountId, privateKey: agent.privateKey } });
    holderClients.push(c);
    return c;
  };
  const freezeStatusOf = async (accountId: string) => (await ps.stack.ledger.mirror.getAccountTokenRelationships(accountId, tokenId))[0]?.freeze_status;
  const buy = async (agent: TestAgent) => {
    const r = await paidPost(ps, agent, '/passport/request', { did: agent.did, tier: 'bronze' });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body.serialNumber as number;
  };
  const statusOf = async (p: Promise<unknown>) => {
    try {
      await p;
      return 'SUCCESS';
    } catch (err) {
      return (err as { status?: { toString(): string } | string }).status?.toString();
    }
  };

  beforeAll(async () => {
    ps = await startPassportStack('nontransfer');
    await ps.startWorker();
    agents = ps.agents;
    tokenId = ps.stack.deployment.passportTokenId;
  });
  afterAll(async () => {
    for (const c of holderClients) c.close();
    await ps?.stop();
  });

  it("a holder's own SDK transfer of the passport fails with ACCOUNT_FROZEN_FOR_TOKEN; the mirror still shows the holder", async () => {
    const holder = agents[0];
    const serial = await buy(holder);
    expect(await freezeStatusOf(holder.accountId)).toBe('FROZEN');
    expect(await ps.stack.ledger.mirror.getNftHolder(tokenId, serial)).toBe(holder.accountId);

    const client = clientOf(holder);
    const tx = new TransferTransaction().addNftTransfer(new NftId(TokenId.fromString(tokenId), serial), AccountId.fromString(holder.accountId), AccountId.fromString(agents[4].accountId));
    const response = await (await tx.freezeWith(client).signWithOperator(client)).execute(client);
    expect(await statusOf(response.getReceipt(client))).toBe('ACCOUNT_FROZEN_FOR_TOKEN');

    expect(await ps.stack.ledger.mirror.getNftHolder(tokenId, serial)).toBe(holder.accountId);
    expect(await ps.stack.ledger.mirror.getAccountNfts(agents[4].accountId, { tokenId })).toHaveLength(0);
    const view = await getJson(ps, `/passport/${tokenId}/${serial}`);
    expect(view.status).toBe(200);
  });

  it('admin revoke still works on a frozen holder: unfreeze, wipe, DID 404', async () => {
    const holder = agents[1];
    const serial = await buy(holder);
    expect(await freezeStatusOf(holder.accountId)).toBe('FROZEN');
    const res = await fetch(`${ps.baseUrl}/admin/revoke`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${ADMIN_TOKEN}` },
      body: JSON.stringify({ tokenId, serial, reason: 'non-transferable check' }),
    });
    const body = (await res.json()) as Record<string, any>;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body).toMatchObject({ revoked: true, tokenId, serialNumber: serial, did: holder.did });
    expect((await ps.stack.ledger.mirror.getNft(tokenId, serial))?.deleted).toBe(true);
    expect(await ps.stack.ledger.mirror.getNftHolder(tokenId, serial)).toBeNull();
    expect(await freezeStatusOf(holder.accountId)).toBe('UNFROZEN');
    const did = await getJson(ps, `/did/${holder.did}`);
    expect([did.status, did.body.code]).toEqual([404, 'passport_not_found']);
  });

  it('upgrade answers from the ledger: 404 for an NFT wiped on the ledger, 403 when another account holds it, though PostgreSQL still says active', async () => {
    const service = ps.stack.ledger.client; // operator = the collection's freeze and wipe key

    // Wiped directly on the ledger (no workflow): PostgreSQL still has the passport as active.
    const wiped = agents[2];
    const wipedSerial = await buy(wiped);
    const wipe = () => wipeNft(service, { tokenId, accountId: wiped.accountId, serials: [wipedSerial] });
    const frozenWipe = await wipe().catch((e: unknown) => e);
    expect(frozenWipe).toBeInstanceOf(LedgerError);
    expect((frozenWipe as LedgerError).status).toBe('ACCOUNT_FROZEN_FOR_TOKEN'); // Hedera refuses to wipe a frozen relationship
    await freezeAccount(service, { tokenId, accountId: wiped.accountId, frozen: false });
    await wipe();
    const row = await findPassport(ps.sql, tokenId, wipedSerial);
    expect([row?.account_id, row?.revoked_at ?? null]).toEqual([wiped.accountId, null]);
    const gone = await signedPost(ps, wiped, `/passport/${tokenId}/${wipedSerial}/upgrade`, { did: wiped.did, tier: 'gold' });
    expect([gone.status, gone.body.code], JSON.stringify(gone.body)).toEqual([404, 'passport_not_found']);

    // Moved on the ledger after an unfreeze by the service: the signer no longer holds it.
    const mover = agents[3];
    const moved = await buy(mover);
    await freezeAccount(service, { tokenId, accountId: mover.accountId, frozen: false });
    const client = clientOf(mover);
    const tx = new TransferTransaction().addNftTransfer(new NftId(TokenId.fromString(tokenId), moved), AccountId.fromString(mover.accountId), AccountId.fromString(agents[5].accountId));
    const receipt = await (await (await tx.freezeWith(client).signWithOperator(client)).execute(client)).getReceipt(client);
    expect(receipt.status.toString()).toBe('SUCCESS');
    expect((await findPassport(ps.sql, tokenId, moved))?.account_id).toBe(mover.accountId);
    const notOwned = await signedPost(ps, mover, `/passport/${tokenId}/${moved}/upgrade`, { did: mover.did, tier: 'gold' });
    expect([notOwned.status, notOwned.body.code], JSON.stringify(notOwned.body)).toEqual([403, 'passport_not_owned']);
  });

  it('the freeze activity is idempotent per key, and a collection without a freeze key is a returned status, not a failure', async () => {
    const holder = agents[4];
    const serial = await buy(holder);
    // the workflow already froze the holder; a retry of its own step (same key) reuses that outcome
    const issuanceKey = ps.workflowId(`passport:local:${holder.accountId}`);
    const recorded = await ps.sql`select idempotency_key, transaction_id from ledger_submissions where kind = 'token_freeze' and idempotency_key like ${issuanceKey + '/%'}`;
    expect(recorded).toHaveLength(1);
    const again = await ps.activities.setPassportFrozen({ idempotencyKey: recorded[0].idempotency_key, accountId: holder.accountId, frozen: true });
    expect(again).toEqual({ transactionId: recorded[0].transaction_id, status: 'SUCCESS', accountId: holder.accountId });
    expect(await ps.stack.ledger.mirror.getNftHolder(tokenId, serial)).toBe(holder.accountId);

    // a collection created before freeze keys: TOKEN_HAS_NO_FREEZE_KEY comes back as the status
    const service = ps.stack.ledger.client;
    const opKey = PrivateKey.fromStringDer(ps.stack.localnet.config.operator.privateKey).publicKey;
    const legacy = (await (await new TokenCreateTransaction().setTokenName('Old passports').setTokenSymbol('OLD').setTokenType(TokenType.NonFungibleUnique)
      .setTreasuryAccountId(ps.stack.localnet.config.operator.accountId).setSupplyKey(opKey).setWipeKey(opKey).execute(service)).getReceipt(service)).tokenId!.toString();
    const r = await ps.activities.setPassportFrozen({ idempotencyKey: `test/${legacy}/freeze`, tokenId: legacy, accountId: holder.accountId, frozen: true });
    expect(r).toMatchObject({ status: 'TOKEN_HAS_NO_FREEZE_KEY', accountId: holder.accountId });
  });

  it('a passport of the collection before a migration is upgraded in its own collection, never the current one', async () => {
    // the current collection has serial 1 (an earlier test's passport); a previous collection gets its own serial 1
    const service = ps.stack.ledger.client;
    const opKey = PrivateKey.fromStringDer(ps.stack.localnet.config.operator.privateKey).publicKey;
    const previous = (await (await new TokenCreateTransaction().setTokenName('Passports before the migration').setTokenSymbol('OLDP').setTokenType(TokenType.NonFungibleUnique)
      .setTreasuryAccountId(ps.stack.localnet.config.operator.accountId).setSupplyKey(opKey).setMetadataKey(opKey).execute(service)).getReceipt(service)).tokenId!.toString();
    const minted = await (await new TokenMintTransaction().setTokenId(previous).addMetadata(encodePassportMetadata({ tier: 'bronze', capabilities: [] })).execute(service)).getReceipt(service);
    const serial = Number(minted.serials[0]);
    expect(serial).toBe(1);
    const currentBefore = (await ps.stack.ledger.mirror.getNft(tokenId, 1))?.metadata;
    expect(currentBefore).toBeDefined();

    // the step runs as a workflow's would, on its own claim (issue 26 item 2: the metadata key rewrites only a claimed passport)
    const workflowId = `test-upgrade:${previous}:1`;
    const runId = randomUUID();
    const payment = `0.0.2@${Date.now()}.000000001`;
    await ps.sql`insert into passports (network, token_id, serial, account_id, did, tier, capabilities, issued_at, payment_transaction_id)
                 values ('local', ${previous}, 1, ${ps.stack.localnet.config.operator.accountId}, ${`did:hedera:local:${ps.stack.localnet.config.operator.accountId}`}, 'bronze', '[]', now(), ${`${payment}-issue`})`;
    await ps.sql`insert into passport_upgrades (payment_transaction_id, workflow_id, token_id, serial, account_id, old_tier, new_tier, status, ledger_writes_run_id)
                 values (${payment}, ${workflowId}, ${previous}, 1, ${ps.stack.localnet.config.operator.accountId}, 'bronze', 'gold', 'pending', ${runId})`;
    await new MockActivityEnvironment({ workflowExecution: { workflowId, runId } }).run(ps.activities.updatePassportMetadata, {
      idempotencyKey: `${workflowId}/${payment}/metadata`,
      tokenId: previous,
      serial,
      tier: 'gold' as const,
      capabilities: [...tierEntry('gold').capabilities],
    });
    const tierOf = async (collection: string) => decodePassportMetadata(Buffer.from((await ps.stack.ledger.mirror.getNft(collection, 1))!.metadata, 'base64'))?.tier;
    expect(await tierOf(previous)).toBe('gold');
    expect((await ps.stack.ledger.mirror.getNft(tokenId, 1))?.metadata).toBe(currentBefore);
  });

  it('upgrade answers 503 service_unavailable when the mirror cannot say who holds the passport', async () => {
    const holder = agents[4]; // holds a live passport (previous test)
    const [row] = await ps.sql`select token_id, serial from passports where account_id = ${holder.accountId} and revoked_at is null`;
    // same database and signature keys; only the NFT read goes to a mirror that does not answer
    const deadMirror = new MirrorClient('http://127.0.0.1:9/api/v1', { timeoutMs: 2_000 });
    const app = await buildTestApp({ ...ps.stack.env, RATE_LIMIT_MAX: '100000' }, { sql: ps.sql, ledger: { ...ps.stack.ledger, mirror: deadMirror }, temporal: async () => ps.t.client });
    try {
      const res = await app.inject({
        method: 'POST',
        url: `/passport/${row.token_id}/${row.serial}/upgrade`,
        headers: { 'content-type': 'application/json', ...(await signedHeaders(app, holder)) },
        payload: { did: holder.did, tier: 'gold' },
      });
      expect([res.statusCode, res.json().code], res.body).toEqual([503, 'service_unavailable']);
    } finally {
      await app.close();
    }
  });
});
