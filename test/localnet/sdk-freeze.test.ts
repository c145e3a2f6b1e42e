// Conformance of token freezing, driven only through @hashgraph/sdk: TokenCreate with a freeze key
// and freezeDefault, TokenFreezeAccount / TokenUnfreezeAccount, transfers and wipes of a frozen
// relationship, the mirror's freeze_status / freeze_key / freeze_default, and a journal replay.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountCreateTransaction,
  AccountId,
  AccountInfoQuery,
  Client,
  Hbar,
  PrivateKey,
  TokenAssociateTransaction,
  TokenCreateTransaction,
  TokenFreezeTransaction,
  TokenId,
  TokenInfoQuery,
  TokenMintTransaction,
  TokenType,
  TokenUnfreezeTransaction,
  TokenWipeTransaction,
  TransferTransaction,
} from '@hashgraph/sdk';
import type { Localnet } from '../../localnet/index.js';
import { closeTestLocalnet, getJson, openTestLocalnet, sdkClient, startTestLocalnet, statusOf } from './harness.js';

let net: Localnet;
let client: Client;
let tmp: { dir: string; cleanup(): void };
let opKey: PrivateKey;
const operator = () => AccountId.fromString(net.config.operator.accountId);

async function newAccount(key: PrivateKey, maxAuto = 0): Promise<AccountId> {
  const tx = new AccountCreateTransaction().setKeyWithoutAlias(key.publicKey).setInitialBalance(new Hbar(10));
  if (maxAuto) tx.setMaxAutomaticTokenAssociations(maxAuto);
  return (await (await tx.execute(client)).getReceipt(client)).accountId!;
}

async function createToken(opts: { freezeKey?: PrivateKey; freezeDefault?: boolean }): Promise<TokenId> {
  const tx = new TokenCreateTransaction()
    .setTokenName('Freezable')
    .setTokenSymbol('FRZ')
    .setTokenType(TokenType.NonFungibleUnique)
    .setTreasuryAccountId(operator())
    .setSupplyKey(opKey.publicKey)
    .setWipeKey(opKey.publicKey);
  if (opts.freezeKey) tx.setFreezeKey(opts.freezeKey.publicKey);
  if (opts.freezeDefault !== undefined) tx.setFreezeDefault(opts.freezeDefault);
  return (await (await tx.execute(client)).getReceipt(client)).tokenId!;
}

async function mint(tokenId: TokenId, n: number): Promise<number[]> {
  const metas = Array.from({ length: n }, (_, i) => Buffer.from(`nft-${i}`));
  const r = await (await new TokenMintTransaction().setTokenId(tokenId).setMetadata(metas).execute(client)).getReceipt(client);
  return r.serials.map((s) => s.toNumber());
}

async function associate(account: AccountId, key: PrivateKey, tokenId: TokenId) {
  return (await (await new TokenAssociateTransaction().setAccountId(account).setTokenIds([tokenId]).freezeWith(client).sign(key)).execute(client)).getReceipt(client);
}

async function send(tokenId: TokenId, serial: number, from: AccountId, to: AccountId, key?: PrivateKey) {
  const tx = new TransferTransaction().addNftTransfer(tokenId, serial, from, to).freezeWith(client);
  if (key) await tx.sign(key);
  return (await tx.execute(client)).getReceipt(client);
}

/** Freeze or unfreeze, signed by `signers` besides the operator (the payer). */
async function setFrozen(frozen: boolean, tokenId: TokenId, account: AccountId, signers: PrivateKey[]) {
  const tx = (frozen ? new TokenFreezeTransaction() : new TokenUnfreezeTransaction()).setTokenId(tokenId).setAccountId(account).freezeWith(client);
  for (const k of signers) await tx.sign(k);
  return (await tx.execute(client)).getReceipt(client);
}

const wipe = async (tokenId: TokenId, account: AccountId, serial: number) =>
  (await (await new TokenWipeTransaction().setTokenId(tokenId).setAccountId(account).setSerials([serial]).execute(client)).getReceipt(client));

async function mirrorFreezeStatus(account: AccountId, tokenId: TokenId): Promise<string | undefined> {
  const r = await getJson(`${net.mirrorUrl}/accounts/${account}/tokens?token.id=${tokenId}`);
  expect(r.status).toBe(200);
  return r.body.tokens[0]?.freeze_status;
}

beforeAll(async () => {
  ({ tmp, net, client, opKey } = await openTestLocalnet('freeze'));
});

afterAll(() => closeTestLocalnet({ tmp, net, client }));

describe('token freeze (HTS rules)', () => {
  const freezeKey = PrivateKey.generateED25519();
  let tokenId: TokenId;
  let alice: AccountId;
  let aliceKey: PrivateKey;
  let bob: AccountId;
  let serials: number[];

  it('creates a token with a freeze key; the mirror and TokenInfo show the key and freeze default', async () => {
    tokenId = await createToken({ freezeKey, freezeDefault: false });
    const token = await getJson(`${net.mirrorUrl}/tokens/${tokenId}`);
    expect(token.body.freeze_key).toEqual({ _type: 'ED25519', key: Buffer.from(freezeKey.publicKey.toBytesRaw()).toString('hex') });
    expect(token.body.freeze_default).toBe(false);
    const info = await new TokenInfoQuery().setTokenId(tokenId).execute(client);
    expect(info.freezeKey?.toString()).toBe(freezeKey.publicKey.toString());
    expect(info.defaultFreezeStatus).toBe(false); // unfrozen by default (null would be "not applicable")
    // the treasury's own relationship is never frozen
    expect(await mirrorFreezeStatus(operator(), tokenId)).toBe('UNFROZEN');

    // freezeDefault without a freeze key is refused
    expect(await statusOf(() => createToken({ freezeDefault: true }))).toBe('TOKEN_HAS_NO_FREEZE_KEY');
  });

  it('freezes a relationship with the freeze key only; transfers from and to it fail with ACCOUNT_FROZEN_FOR_TOKEN', async () => {
    aliceKey = PrivateKey.generateED25519();
    alice = await newAccount(aliceKey);
    const bobKey = PrivateKey.generateED25519();
    bob = await newAccount(bobKey, 5);
    serials = await mint(tokenId, 3);
    await associate(alice, aliceKey, tokenId);
    expect(await mirrorFreezeStatus(alice, tokenId)).toBe('UNFROZEN');
    expect((await send(tokenId, serials[0], operator(), alice)).status.toString()).toBe('SUCCESS');

    // the freeze key must sign (the payer's key is not enough); the token must be associated
    expect(await statusOf(() => setFrozen(true, tokenId, alice, []))).toBe('INVALID_SIGNATURE');
    const carol = await newAccount(PrivateKey.generateED25519());
    expect(await statusOf(() => setFrozen(true, tokenId, carol, [freezeKey]))).toBe('TOKEN_NOT_ASSOCIATED_TO_ACCOUNT');

    expect((await setFrozen(true, tokenId, alice, [freezeKey])).status.toString()).toBe('SUCCESS');
    expect(await mirrorFreezeStatus(alice, tokenId)).toBe('FROZEN');
    const rels = (await new AccountInfoQuery().setAccountId(alice).execute(client)).tokenRelationships;
    expect(rels.get(tokenId)?.isFrozen).toBe(true);
    // idempotent, as on Hedera
    expect((await setFrozen(true, tokenId, alice, [freezeKey])).status.toString()).toBe('SUCCESS');

    // the holder cannot send, the treasury cannot send to it; the NFT stays where it was
    expect(await statusOf(() => send(tokenId, serials[0], alice, bob, aliceKey))).toBe('ACCOUNT_FROZEN_FOR_TOKEN');
    expect(await statusOf(() => send(tokenId, serials[1], operator(), alice))).toBe('ACCOUNT_FROZEN_FOR_TOKEN');
    const nft = await getJson(`${net.mirrorUrl}/tokens/${tokenId}/nfts/${serials[0]}`);
    expect(nft.body.account_id).toBe(alice.toString());
    // other relationships are untouched (bob auto-associates and receives)
    expect((await send(tokenId, serials[1], operator(), bob)).status.toString()).toBe('SUCCESS');
  });

  it('a frozen relationship cannot be wiped until it is unfrozen', async () => {
    expect(await statusOf(() => wipe(tokenId, alice, serials[0]))).toBe('ACCOUNT_FROZEN_FOR_TOKEN');
    expect(await statusOf(() => setFrozen(false, tokenId, alice, []))).toBe('INVALID_SIGNATURE');
    expect((await setFrozen(false, tokenId, alice, [freezeKey])).status.toString()).toBe('SUCCESS');
    expect(await mirrorFreezeStatus(alice, tokenId)).toBe('UNFROZEN');
    expect((await setFrozen(false, tokenId, alice, [freezeKey])).status.toString()).toBe('SUCCESS'); // idempotent
    expect((await wipe(tokenId, alice, serials[0])).status.toString()).toBe('SUCCESS');
    const nft = await getJson(`${net.mirrorUrl}/tokens/${tokenId}/nfts/${serials[0]}`);
    expect(nft.body.deleted).toBe(true);
  });

  it('a token without a freeze key: freeze and unfreeze fail with TOKEN_HAS_NO_FREEZE_KEY; freeze_status NOT_APPLICABLE', async () => {
    const plain = await createToken({});
    await associate(alice, aliceKey, plain);
    expect(await statusOf(() => setFrozen(true, plain, alice, [freezeKey]))).toBe('TOKEN_HAS_NO_FREEZE_KEY');
    expect(await statusOf(() => setFrozen(false, plain, alice, [freezeKey]))).toBe('TOKEN_HAS_NO_FREEZE_KEY');
    expect(await mirrorFreezeStatus(alice, plain)).toBe('NOT_APPLICABLE');
    expect((await getJson(`${net.mirrorUrl}/tokens/${plain}`)).body).toMatchObject({ freeze_key: null, freeze_default: false });
    expect((await new TokenInfoQuery().setTokenId(plain).execute(client)).defaultFreezeStatus).toBeNull();
  });

  it('freezeDefault: new associations start frozen, automatic associations are refused', async () => {
    const frozenByDefault = await createToken({ freezeKey, freezeDefault: true });
    expect((await getJson(`${net.mirrorUrl}/tokens/${frozenByDefault}`)).body.freeze_default).toBe(true);
    expect((await new TokenInfoQuery().setTokenId(frozenByDefault).execute(client)).defaultFreezeStatus).toBe(true);
    const [s1, s2] = await mint(frozenByDefault, 2);
    await associate(alice, aliceKey, frozenByDefault);
    expect(await mirrorFreezeStatus(alice, frozenByDefault)).toBe('FROZEN');
    expect(await statusOf(() => send(frozenByDefault, s1, operator(), alice))).toBe('ACCOUNT_FROZEN_FOR_TOKEN');
    // bob has free automatic association slots, but the new relationship would be frozen
    expect(await statusOf(() => send(frozenByDefault, s2, operator(), bob))).toBe('ACCOUNT_FROZEN_FOR_TOKEN');
    expect(await mirrorFreezeStatus(bob, frozenByDefault)).toBeUndefined();
    await setFrozen(false, frozenByDefault, alice, [freezeKey]);
    expect((await send(frozenByDefault, s1, operator(), alice)).status.toString()).toBe('SUCCESS');
  });

  it('freeze state survives a restart (journal replay)', async () => {
    const tx = await new TokenFreezeTransaction().setTokenId(tokenId).setAccountId(bob).freezeWith(client).sign(freezeKey);
    const response = await tx.execute(client);
    expect((await response.getReceipt(client)).status.toString()).toBe('SUCCESS');
    const mirrorTxId = response.transactionId.toString().replace('@', '-').replace(/\.(\d+)$/, '-$1');
    client.close();
    await net.stop();
    net = await startTestLocalnet(tmp.dir);
    client = sdkClient(net.config);
    expect(await mirrorFreezeStatus(bob, tokenId)).toBe('FROZEN');
    expect(await mirrorFreezeStatus(alice, tokenId)).toBe('UNFROZEN');
    const rec = await getJson(`${net.mirrorUrl}/transactions/${mirrorTxId}`);
    expect(rec.body.transactions[0]).toMatchObject({ name: 'TOKENFREEZE', result: 'SUCCESS', entity_id: bob.toString() });
  });
});
