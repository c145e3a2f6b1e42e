// Conformance: localnet driven only through @hashgraph/sdk, as the production ledger adapter does.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  AccountCreateTransaction,
  AccountId,
  AccountInfoQuery,
  Client,
  Hbar,
  KeyList,
  Long,
  NftId,
  PrivateKey,
  ScheduleCreateTransaction,
  ScheduleDeleteTransaction,
  ScheduleInfoQuery,
  ScheduleSignTransaction,
  Timestamp,
  TokenAssociateTransaction,
  TokenCreateTransaction,
  TokenInfoQuery,
  TokenMintTransaction,
  TokenNftInfoQuery,
  TokenSupplyType,
  TokenType,
  TokenUpdateNftsTransaction,
  TokenWipeTransaction,
  TopicCreateTransaction,
  TopicInfoQuery,
  TopicMessageSubmitTransaction,
  Transaction,
  TransactionId,
  TransactionReceiptQuery,
  TransferTransaction,
} from '@hashgraph/sdk';
import { proto } from '../../localnet/proto.js';
import type { Localnet } from '../../localnet/index.js';
import { closeTestLocalnet, getJson, openTestLocalnet, statusOf, tinybarBalance } from './harness.js';

let net: Localnet;
let client: Client;
let tmp: { dir: string; cleanup(): void };
let opKey: PrivateKey;

const balanceOf = (id: string | AccountId): Promise<bigint> => tinybarBalance(client, id);

async function newAccount(key: PrivateKey, hbar: number, maxAuto = 0): Promise<AccountId> {
  const tx = new AccountCreateTransaction().setKeyWithoutAlias(key.publicKey).setInitialBalance(new Hbar(hbar));
  if (maxAuto) tx.setMaxAutomaticTokenAssociations(maxAuto);
  const r = await (await tx.execute(client)).getReceipt(client);
  return r.accountId!;
}

beforeAll(async () => {
  ({ tmp, net, client, opKey } = await openTestLocalnet('sdk'));
});

afterAll(() => closeTestLocalnet({ tmp, net, client }));

describe('bootstrap', () => {
  it('writes localnet.json in the documented shape', () => {
    const cfg = JSON.parse(readFileSync(join(tmp.dir, 'localnet.json'), 'utf8'));
    expect(cfg.network).toBe('local');
    expect(cfg.node).toEqual({ address: net.grpcAddress, accountId: '0.0.3' });
    expect(cfg.mirrorUrl).toBe(net.mirrorUrl);
    expect(cfg.mirrorUrl).toMatch(/\/api\/v1$/);
    expect(cfg.operator.accountId).toBe('0.0.2');
    expect(cfg.operator.privateKey).toMatch(/^30[0-9a-f]+$/);
    for (const k of ['treasury', 'escrow', 'payTo', 'passportTokenId']) expect(cfg[k]).toMatch(/^0\.0\.\d+$/);
    // fees paid (operator), fees and passports held (treasury), payments received (payTo), escrowed money: four accounts
    expect(new Set([cfg.operator.accountId, cfg.treasury, cfg.payTo, cfg.escrow]).size).toBe(4);
    expect(cfg.facilitator.feePayer).toMatch(/^0\.0\.\d+$/);
    expect(Object.keys(cfg.topics).sort()).toEqual(['a2a', 'audit', 'directory', 'marketplace']);
    expect(cfg.accounts.length).toBeGreaterThanOrEqual(6);
    expect(cfg.accounts.filter((a: { keyType: string }) => a.keyType === 'ED25519').length).toBeGreaterThanOrEqual(3);
    expect(cfg.accounts.filter((a: { keyType: string }) => a.keyType === 'ECDSA').length).toBeGreaterThanOrEqual(3);
    for (const a of cfg.accounts) {
      expect(a.did).toBe(`did:hedera:local:${a.accountId}`);
      expect(a.evmAddress).toMatch(/^0x[0-9a-f]{40}$/);
      expect(PrivateKey.fromStringDer(a.privateKey).publicKey.toStringDer()).toBe(a.publicKey);
    }
  });

  it('funds agents and the passport collection is an NFT with operator keys', async () => {
    for (const a of net.config.accounts) expect(await balanceOf(a.accountId)).toBeGreaterThan(0n);
    const info = await new TokenInfoQuery().setTokenId(net.config.passportTokenId).execute(client);
    expect(info.tokenType?.toString()).toBe('NON_FUNGIBLE_UNIQUE');
    expect(info.treasuryAccountId?.toString()).toBe(net.config.treasury);
    for (const k of [info.supplyKey, info.wipeKey, info.metadataKey, info.adminKey])
      expect(k?.toString()).toBe(opKey.publicKey.toString());
  });
});

describe('accounts and HBAR', () => {
  it('creates an account, transfers, and reads balances and info', async () => {
    const key = PrivateKey.generateED25519();
    const id = await newAccount(key, 5);
    expect(await balanceOf(id)).toBe(500_000_000n);
    const r = await (
      await new TransferTransaction().addHbarTransfer('0.0.2', new Hbar(-3)).addHbarTransfer(id, new Hbar(3)).execute(client)
    ).getReceipt(client);
    expect(r.status.toString()).toBe('SUCCESS');
    expect(await balanceOf(id)).toBe(800_000_000n);
    const info = await new AccountInfoQuery().setAccountId(id).execute(client);
    expect(info.accountId.toString()).toBe(id.toString());
    expect(info.key.toString()).toBe(key.publicKey.toString());
    expect(info.balance.toTinybars().toString()).toBe('800000000');
  });

  it('refuses a transfer beyond the balance and one that does not sum to zero', async () => {
    const key = PrivateKey.generateED25519();
    const id = await newAccount(key, 1);
    const tx = await new TransferTransaction()
      .addHbarTransfer(id, new Hbar(-2))
      .addHbarTransfer('0.0.2', new Hbar(2))
      .freezeWith(client)
      .sign(key);
    expect(await statusOf(async () => (await tx.execute(client)).getReceipt(client))).toBe('INSUFFICIENT_ACCOUNT_BALANCE');
    expect(await balanceOf(id)).toBe(100_000_000n);
    const bad = new TransferTransaction().addHbarTransfer('0.0.2', -5).addHbarTransfer(id, 4);
    expect(await statusOf(() => bad.execute(client))).toBe('INVALID_ACCOUNT_AMOUNTS');
  });
});

describe('HTS NFTs', () => {
  it('create, associate, mint, transfer, update metadata, info, wipe', async () => {
    const treasuryKey = PrivateKey.generateED25519();
    const treasury = await newAccount(treasuryKey, 20);
    const create = await new TokenCreateTransaction()
      .setTokenName('Test NFT')
      .setTokenSymbol('TNFT')
      .setTokenType(TokenType.NonFungibleUnique)
      .setSupplyType(TokenSupplyType.Infinite)
      .setTreasuryAccountId(treasury)
      .setAdminKey(opKey.publicKey)
      .setSupplyKey(opKey.publicKey)
      .setWipeKey(opKey.publicKey)
      .setMetadataKey(opKey.publicKey)
      .freezeWith(client)
      .sign(treasuryKey);
    const tokenId = (await (await create.execute(client)).getReceipt(client)).tokenId!;

    const mint = await (
      await new TokenMintTransaction().setTokenId(tokenId).setMetadata([Buffer.from('one'), Buffer.from('two')]).execute(client)
    ).getReceipt(client);
    expect(mint.serials.map((s) => s.toNumber())).toEqual([1, 2]);

    expect(
      await statusOf(async () =>
        (await new TokenMintTransaction().setTokenId(tokenId).setMetadata([Buffer.alloc(101, 1)]).execute(client)).getReceipt(client),
      ),
    ).toBe('METADATA_TOO_LONG');
    const eleven = Array.from({ length: 11 }, (_, i) => Buffer.from(`m${i}`));
    expect(
      await statusOf(async () => (await new TokenMintTransaction().setTokenId(tokenId).setMetadata(eleven).execute(client)).getReceipt(client)),
    ).toBe('BATCH_SIZE_LIMIT_EXCEEDED');

    // A receiver with no association and no auto-association slot cannot receive.
    const aliceKey = PrivateKey.generateECDSA();
    const alice = await newAccount(aliceKey, 10);
    const send = async (serial: number, from: AccountId, to: AccountId, key: PrivateKey) =>
      (await (await new TransferTransaction().addNftTransfer(tokenId, serial, from, to).freezeWith(client).sign(key)).execute(client)).getReceipt(client);
    expect(await statusOf(() => send(1, treasury, alice, treasuryKey))).toBe('TOKEN_NOT_ASSOCIATED_TO_ACCOUNT');

    await (await (await new TokenAssociateTransaction().setAccountId(alice).setTokenIds([tokenId]).freezeWith(client).sign(aliceKey)).execute(client)).getReceipt(client);
    expect((await send(1, treasury, alice, treasuryKey)).status.toString()).toBe('SUCCESS');
    // The sender no longer owns serial 1; a missing sender signature is INVALID_SIGNATURE.
    expect(await statusOf(() => send(1, treasury, alice, treasuryKey))).toBe('SENDER_DOES_NOT_OWN_NFT_SERIAL_NO');
    expect(await statusOf(() => send(2, treasury, alice, aliceKey))).toBe('INVALID_SIGNATURE');

    // Auto-association: a bootstrap agent has free slots.
    const agent = net.config.accounts[0];
    expect((await send(2, treasury, AccountId.fromString(agent.accountId), treasuryKey)).status.toString()).toBe('SUCCESS');

    const upd = await (
      await new TokenUpdateNftsTransaction().setTokenId(tokenId).setSerialNumbers([Long.fromNumber(1)]).setMetadata(Buffer.from('one-v2')).execute(client)
    ).getReceipt(client);
    expect(upd.status.toString()).toBe('SUCCESS');

    const [nft] = await new TokenNftInfoQuery().setNftId(new NftId(tokenId, 1)).execute(client);
    expect(nft.accountId.toString()).toBe(alice.toString());
    expect(Buffer.from(nft.metadata!).toString()).toBe('one-v2');

    const info = await new TokenInfoQuery().setTokenId(tokenId).execute(client);
    expect(info.totalSupply.toNumber()).toBe(2);
    expect(info.name).toBe('Test NFT');

    const wipe = await (await new TokenWipeTransaction().setTokenId(tokenId).setAccountId(alice).setSerials([1]).execute(client)).getReceipt(client);
    expect(wipe.status.toString()).toBe('SUCCESS');
    expect(await statusOf(() => new TokenNftInfoQuery().setNftId(new NftId(tokenId, 1)).execute(client))).toBe('INVALID_NFT_ID');
    expect((await new TokenInfoQuery().setTokenId(tokenId).execute(client)).totalSupply.toNumber()).toBe(1);
  });
});

describe('HCS topics', () => {
  it('creates a topic, submits a chunked message and reads it back from the mirror', async () => {
    const submitKey = PrivateKey.generateED25519();
    const topicId = (
      await (await new TopicCreateTransaction().setTopicMemo('t').setSubmitKey(submitKey.publicKey).execute(client)).getReceipt(client)
    ).topicId!;
    const big = Buffer.from(Array.from({ length: 2500 }, (_, i) => String.fromCharCode(97 + (i % 26))).join(''));
    const submit = await new TopicMessageSubmitTransaction().setTopicId(topicId).setMessage(big).freezeWith(client).sign(submitKey);
    const responses = await submit.executeAll(client);
    expect(responses.length).toBe(3);
    for (const r of responses) expect((await r.getReceipt(client)).status.toString()).toBe('SUCCESS');

    const unsigned = new TopicMessageSubmitTransaction().setTopicId(topicId).setMessage('no key');
    expect(await statusOf(async () => (await unsigned.execute(client)).getReceipt(client))).toBe('INVALID_SIGNATURE');

    const info = await new TopicInfoQuery().setTopicId(topicId).execute(client);
    expect(info.sequenceNumber.toNumber()).toBe(3);

    const { status, body } = await getJson(`${net.mirrorUrl}/topics/${topicId}/messages`);
    expect(status).toBe(200);
    expect(body.messages.length).toBe(3);
    const first = body.messages[0].chunk_info.initial_transaction_id;
    const parts = body.messages
      .filter((m: any) => JSON.stringify(m.chunk_info.initial_transaction_id) === JSON.stringify(first))
      .sort((a: any, b: any) => a.chunk_info.number - b.chunk_info.number);
    expect(parts.map((m: any) => m.chunk_info.number)).toEqual([1, 2, 3]);
    expect(parts.every((m: any) => m.chunk_info.total === 3)).toBe(true);
    const joined = Buffer.concat(parts.map((m: any) => Buffer.from(m.message, 'base64')));
    expect(joined.equals(big)).toBe(true);
  });
});

describe('scheduled transactions', () => {
  it('executes a two-key transfer once the last key signs', async () => {
    const aKey = PrivateKey.generateED25519();
    const bKey = PrivateKey.generateECDSA();
    const a = await newAccount(aKey, 10);
    const b = await newAccount(bKey, 10);
    const c = await newAccount(PrivateKey.generateED25519(), 1);
    const inner = new TransferTransaction()
      .addHbarTransfer(a, new Hbar(-2))
      .addHbarTransfer(b, new Hbar(-3))
      .addHbarTransfer(c, new Hbar(5));
    const create = await new ScheduleCreateTransaction()
      .setScheduledTransaction(inner)
      .setScheduleMemo('two keys')
      .freezeWith(client)
      .sign(aKey);
    const receipt = await (await create.execute(client)).getReceipt(client);
    const scheduleId = receipt.scheduleId!;
    const scheduledTxId = receipt.scheduledTransactionId!;
    expect(scheduledTxId.scheduled).toBe(true);

    let info = await new ScheduleInfoQuery().setScheduleId(scheduleId).execute(client);
    expect(info.executed).toBeNull();
    expect(await balanceOf(c)).toBe(100_000_000n);

    // The same create again: IDENTICAL_SCHEDULE_ALREADY_CREATED naming the existing schedule.
    const again = await new ScheduleCreateTransaction()
      .setScheduledTransaction(
        new TransferTransaction().addHbarTransfer(a, new Hbar(-2)).addHbarTransfer(b, new Hbar(-3)).addHbarTransfer(c, new Hbar(5)),
      )
      .setScheduleMemo('two keys')
      .execute(client);
    const dup = await new TransactionReceiptQuery().setTransactionId(again.transactionId).setValidateStatus(false).execute(client);
    expect(dup.status.toString()).toBe('IDENTICAL_SCHEDULE_ALREADY_CREATED');
    expect(dup.scheduleId?.toString()).toBe(scheduleId.toString());

    const sign = await new ScheduleSignTransaction().setScheduleId(scheduleId).freezeWith(client).sign(bKey);
    expect((await (await sign.execute(client)).getReceipt(client)).status.toString()).toBe('SUCCESS');

    const innerReceipt = await new TransactionReceiptQuery().setTransactionId(scheduledTxId).execute(client);
    expect(innerReceipt.status.toString()).toBe('SUCCESS');
    expect(await balanceOf(c)).toBe(600_000_000n);
    expect(await balanceOf(a)).toBe(800_000_000n);
    info = await new ScheduleInfoQuery().setScheduleId(scheduleId).execute(client);
    expect(info.executed).not.toBeNull();
    expect(
      await statusOf(async () => (await (await new ScheduleSignTransaction().setScheduleId(scheduleId).freezeWith(client).sign(bKey)).execute(client)).getReceipt(client)),
    ).toBe('SCHEDULE_ALREADY_EXECUTED');
  });

  it('deletes a schedule with its admin key', async () => {
    const aKey = PrivateKey.generateED25519();
    const a = await newAccount(aKey, 5);
    const r = await (
      await new ScheduleCreateTransaction()
        .setScheduledTransaction(new TransferTransaction().addHbarTransfer(a, -1).addHbarTransfer('0.0.2', 1))
        .setAdminKey(opKey.publicKey)
        .execute(client)
    ).getReceipt(client);
    const del = await (await new ScheduleDeleteTransaction().setScheduleId(r.scheduleId!).execute(client)).getReceipt(client);
    expect(del.status.toString()).toBe('SUCCESS');
    const info = await new ScheduleInfoQuery().setScheduleId(r.scheduleId!).execute(client);
    expect(info.deleted).not.toBeNull();
    expect(
      await statusOf(async () => (await (await new ScheduleSignTransaction().setScheduleId(r.scheduleId!).freezeWith(client).sign(aKey)).execute(client)).getReceipt(client)),
    ).toBe('SCHEDULE_ALREADY_DELETED');
  });

  it('accepts a key list as the signer requirement (threshold and list keys)', async () => {
    const k1 = PrivateKey.generateED25519();
    const k2 = PrivateKey.generateECDSA();
    const k3 = PrivateKey.generateED25519();
    const threshold = new KeyList([k1.publicKey, k2.publicKey, k3.publicKey], 2);
    const r = await (await new AccountCreateTransaction().setKeyWithoutAlias(threshold).setInitialBalance(new Hbar(5)).execute(client)).getReceipt(client);
    const id = r.accountId!;
    const pay = (signers: PrivateKey[]) => async () => {
      let tx = new TransferTransaction().addHbarTransfer(id, -1).addHbarTransfer('0.0.2', 1).freezeWith(client);
      for (const k of signers) tx = await tx.sign(k);
      return (await tx.execute(client)).getReceipt(client);
    };
    expect(await statusOf(pay([k1]))).toBe('INVALID_SIGNATURE');
    expect((await pay([k1, k3])()).status.toString()).toBe('SUCCESS');
    expect((await pay([k2, k3])()).status.toString()).toBe('SUCCESS');
  });
});

describe('signing and precheck', () => {
  it('executes an offline-signed transaction', async () => {
    const key = PrivateKey.generateECDSA();
    const id = await newAccount(key, 5);
    const frozen = new TransferTransaction()
      .setTransactionId(TransactionId.generate(id))
      .addHbarTransfer(id, new Hbar(-1))
      .addHbarTransfer('0.0.2', new Hbar(1))
      .freezeWith(client);
    const bytes = frozen.toBytes();
    // Signer side: sign the body bytes with the private key only.
    const list = proto.TransactionList.decode(bytes);
    const signed = proto.SignedTransaction.decode(list.transactionList[0].signedTransactionBytes!);
    const signature = key.sign(signed.bodyBytes);
    // Submitter side: attach the signature and send.
    const tx = Transaction.fromBytes(bytes);
    tx.addSignature(key.publicKey, signature);
    const receipt = await (await tx.execute(client)).getReceipt(client);
    expect(receipt.status.toString()).toBe('SUCCESS');
    expect(await balanceOf(id)).toBe(400_000_000n - 100_000n);
  });

  it('answers DUPLICATE_TRANSACTION for the same bytes sent twice', async () => {
    const tx = await new TransferTransaction().addHbarTransfer('0.0.2', -1).addHbarTransfer(net.config.payTo, 1).freezeWith(client).signWithOperator(client);
    const bytes = tx.toBytes();
    await (await Transaction.fromBytes(bytes).execute(client)).getReceipt(client);
    expect(await statusOf(() => Transaction.fromBytes(bytes).execute(client))).toBe('DUPLICATE_TRANSACTION');
  });

  it('answers INVALID_SIGNATURE when the payer did not sign, and in the receipt for a missing co-signature', async () => {
    const key = PrivateKey.generateED25519();
    const id = await newAccount(key, 5);
    const payerUnsigned = await new TransferTransaction()
      .setTransactionId(TransactionId.generate(id))
      .addHbarTransfer(id, -1)
      .addHbarTransfer('0.0.2', 1)
      .freezeWith(client)
      .sign(PrivateKey.generateED25519());
    expect(await statusOf(() => payerUnsigned.execute(client))).toBe('INVALID_SIGNATURE');

    const noCosign = new TransferTransaction().addHbarTransfer(id, -1).addHbarTransfer('0.0.2', 1);
    const resp = await noCosign.execute(client);
    expect(await statusOf(() => resp.getReceipt(client))).toBe('INVALID_SIGNATURE');
    expect(await balanceOf(id)).toBe(500_000_000n);
  });

  it('answers TRANSACTION_EXPIRED for an old transaction id', async () => {
    const old = TransactionId.withValidStart(AccountId.fromString('0.0.2'), Timestamp.fromDate(new Date(Date.now() - 600_000)));
    const tx = new TransferTransaction().setTransactionId(old).addHbarTransfer('0.0.2', -1).addHbarTransfer(net.config.payTo, 1);
    expect(await statusOf(() => tx.execute(client))).toBe('TRANSACTION_EXPIRED');
  });
});
