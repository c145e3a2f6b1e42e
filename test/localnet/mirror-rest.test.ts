// The mirror REST subset: response shapes field by field, filters, paging and 404s.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountId,
  Client,
  Hbar,
  PrivateKey,
  ScheduleCreateTransaction,
  TokenMintTransaction,
  TopicMessageSubmitTransaction,
  TransferTransaction,
  type TransactionId,
} from '@hashgraph/sdk';
import type { Localnet } from '../../localnet/index.js';
import { closeTestLocalnet, getJson, openTestLocalnet } from './harness.js';

let net: Localnet;
let client: Client;
let tmp: { dir: string; cleanup(): void };
let opKey: PrivateKey;
const TS = /^\d{10}\.\d{9}$/;

function mirrorTxId(id: TransactionId): string {
  const vs = id.validStart!;
  return `${id.accountId!.toString()}-${vs.seconds.toString()}-${vs.nanos.toString().padStart(9, '0')}`;
}

beforeAll(async () => {
  ({ tmp, net, client, opKey } = await openTestLocalnet('mirror'));
});

afterAll(() => closeTestLocalnet({ tmp, net, client }));

describe('mirror REST', () => {
  it('GET accounts/{id}: ED25519 and ECDSA agents', async () => {
    const ed = net.config.accounts.find((a) => a.keyType === 'ED25519')!;
    const { status, body } = await getJson(`${net.mirrorUrl}/accounts/${ed.accountId}`);
    expect(status).toBe(200);
    expect(body.account).toBe(ed.accountId);
    expect(typeof body.balance.balance).toBe('number');
    expect(body.balance.balance).toBeGreaterThan(0);
    expect(body.balance.timestamp).toMatch(TS);
    expect(Array.isArray(body.balance.tokens)).toBe(true);
    const edPub = PrivateKey.fromStringDer(ed.privateKey).publicKey;
    expect(body.key).toEqual({ _type: 'ED25519', key: Buffer.from(edPub.toBytesRaw()).toString('hex') });
    expect(body.evm_address).toBe(ed.evmAddress);
    expect(body.max_automatic_token_associations).toBe(10);
    expect(body.deleted).toBe(false);
    expect(body.created_timestamp).toMatch(TS);
    expect(body).toHaveProperty('memo');
    expect(body).toHaveProperty('receiver_sig_required', false);
    expect(Array.isArray(body.transactions)).toBe(true);
    expect(body.links).toEqual({ next: null });

    const ec = net.config.accounts.find((a) => a.keyType === 'ECDSA')!;
    const r2 = await getJson(`${net.mirrorUrl}/accounts/${ec.accountId}`);
    const ecPub = PrivateKey.fromStringDer(ec.privateKey).publicKey;
    expect(r2.body.key).toEqual({ _type: 'ECDSA_SECP256K1', key: Buffer.from(ecPub.toBytesRaw()).toString('hex') });
    expect(r2.body.evm_address).toBe(ec.evmAddress);
    // Lookup by EVM address works too.
    expect((await getJson(`${net.mirrorUrl}/accounts/${ec.evmAddress}`)).body.account).toBe(ec.accountId);
  });

  it('tokens, NFTs by token and by account, single NFT', async () => {
    const tokenId = net.config.passportTokenId;
    const mint = await (
      await new TokenMintTransaction().setTokenId(tokenId).setMetadata([Buffer.from('p1'), Buffer.from('p2'), Buffer.from('p3')]).execute(client)
    ).getReceipt(client);
    expect(mint.serials.length).toBe(3);
    const agent = net.config.accounts[1];
    await (
      await (
        await new TransferTransaction()
          .addNftTransfer(tokenId, 1, AccountId.fromString(net.config.treasury), AccountId.fromString(agent.accountId))
          .freezeWith(client)
          .sign(opKey)
      ).execute(client)
    ).getReceipt(client);

    const t = await getJson(`${net.mirrorUrl}/tokens/${tokenId}`);
    expect(t.status).toBe(200);
    expect(t.body).toMatchObject({
      token_id: tokenId,
      type: 'NON_FUNGIBLE_UNIQUE',
      name: 'Agent Passport',
      treasury_account_id: net.config.treasury,
      total_supply: '3',
      decimals: '0',
      supply_type: 'INFINITE',
      deleted: false,
    });
    const opKeyJson = { _type: 'ED25519', key: Buffer.from(opKey.publicKey.toBytesRaw()).toString('hex') };
    for (const k of ['admin_key', 'supply_key', 'wipe_key', 'metadata_key', 'freeze_key']) expect(t.body[k]).toEqual(opKeyJson);
    expect(t.body.freeze_default).toBe(false); // holders are frozen one by one, after delivery
    expect(t.body.kyc_key).toBeNull();
    expect(t.body.created_timestamp).toMatch(TS);

    const one = await getJson(`${net.mirrorUrl}/tokens/${tokenId}/nfts/1`);
    expect(one.status).toBe(200);
    expect(Object.keys(one.body).sort()).toEqual(
      ['account_id', 'created_timestamp', 'delegating_spender', 'deleted', 'metadata', 'modified_timestamp', 'serial_number', 'spender', 'token_id'].sort(),
    );
    expect(one.body).toMatchObject({ account_id: agent.accountId, deleted: false, serial_number: 1, token_id: tokenId });
    expect(Buffer.from(one.body.metadata, 'base64').toString()).toBe('p1');
    expect(one.body.created_timestamp).toMatch(TS);
    expect(one.body.modified_timestamp).toMatch(TS);

    const list = await getJson(`${net.mirrorUrl}/tokens/${tokenId}/nfts?limit=2`);
    expect(list.body.nfts.map((n: { serial_number: number }) => n.serial_number)).toEqual([3, 2]);
    expect(list.body.links.next).toMatch(/serialnumber=lt:2/);
    const next = await getJson(`${net.mirrorUrl.replace(/\/api\/v1$/, '')}${list.body.links.next}`);
    expect(next.body.nfts.map((n: { serial_number: number }) => n.serial_number)).toEqual([1]);

    const byAccount = await getJson(`${net.mirrorUrl}/accounts/${agent.accountId}/nfts`);
    expect(byAccount.body.nfts).toEqual([one.body]);
    const acct = await getJson(`${net.mirrorUrl}/accounts/${agent.accountId}`);
    expect(acct.body.balance.tokens).toEqual([{ token_id: tokenId, balance: 1 }]);

    // The agent received the NFT through a free auto-association slot.
    const rels = await getJson(`${net.mirrorUrl}/accounts/${agent.accountId}/tokens?token.id=${tokenId}`);
    expect(rels.status).toBe(200);
    expect(rels.body.tokens).toHaveLength(1);
    expect(rels.body.tokens[0]).toMatchObject({ token_id: tokenId, automatic_association: true, balance: 1, freeze_status: 'UNFROZEN' }); // the passport collection has a freeze key
    expect(rels.body.tokens[0].created_timestamp).toMatch(TS);
    expect(rels.body.links).toEqual({ next: null });
  });

  it('topic messages: filters, order, paging, single message', async () => {
    const topicId = net.config.topics.audit;
    for (let i = 1; i <= 5; i++)
      await (await new TopicMessageSubmitTransaction().setTopicId(topicId).setMessage(`msg ${i}`).execute(client)).getReceipt(client);
    const base = `${net.mirrorUrl}/topics/${topicId}/messages`;
    const all = await getJson(base);
    expect(all.body.messages.length).toBe(5);
    const m = all.body.messages[0];
    expect(Object.keys(m).sort()).toEqual(
      ['chunk_info', 'consensus_timestamp', 'message', 'payer_account_id', 'running_hash', 'running_hash_version', 'sequence_number', 'topic_id'].sort(),
    );
    expect(m).toMatchObject({ payer_account_id: '0.0.2', running_hash_version: 3, sequence_number: 1, topic_id: topicId });
    // The SDK sends chunk info (1 of 1) even for a single-chunk message, and the mirror shows it.
    expect(m.chunk_info).toMatchObject({ number: 1, total: 1, initial_transaction_id: { account_id: '0.0.2', nonce: 0, scheduled: false } });
    expect(m.chunk_info.initial_transaction_id.transaction_valid_start).toMatch(TS);
    expect(m.consensus_timestamp).toMatch(TS);
    expect(Buffer.from(m.message, 'base64').toString()).toBe('msg 1');
    expect(Buffer.from(m.running_hash, 'base64').length).toBe(48);
    expect(all.body.links).toEqual({ next: null });

    const seqs = (b: { messages: { sequence_number: number }[] }) => b.messages.map((x) => x.sequence_number);
    expect(seqs((await getJson(`${base}?sequencenumber=gt:2&sequencenumber=lte:4`)).body)).toEqual([3, 4]);
    expect(seqs((await getJson(`${base}?sequencenumber=3`)).body)).toEqual([3]);
    expect(seqs((await getJson(`${base}?order=desc&limit=2`)).body)).toEqual([5, 4]);
    const ts3 = all.body.messages[2].consensus_timestamp;
    expect(seqs((await getJson(`${base}?timestamp=gte:${ts3}`)).body)).toEqual([3, 4, 5]);
    expect(seqs((await getJson(`${base}?timestamp=lt:${ts3}`)).body)).toEqual([1, 2]);

    const p1 = await getJson(`${base}?limit=2`);
    expect(seqs(p1.body)).toEqual([1, 2]);
    const origin = net.mirrorUrl.replace(/\/api\/v1$/, '');
    const p2 = await getJson(origin + p1.body.links.next);
    expect(seqs(p2.body)).toEqual([3, 4]);
    const p3 = await getJson(origin + p2.body.links.next);
    expect(seqs(p3.body)).toEqual([5]);
    expect(p3.body.links.next).toBeNull();

    // Paging from a bound, both orders: the next link replaces the bound and keeps the other side.
    const d1 = await getJson(`${base}?sequencenumber=lt:5&order=desc&limit=2`);
    expect(seqs(d1.body)).toEqual([4, 3]);
    expect(d1.body.links.next).toMatch(/sequencenumber=lt:3/);
    const d2 = await getJson(origin + d1.body.links.next);
    expect(seqs(d2.body)).toEqual([2, 1]);
    expect(d2.body.links.next).toBeNull();
    const a1 = await getJson(`${base}?sequencenumber=gt:1&sequencenumber=lt:5&limit=2`);
    expect(seqs(a1.body)).toEqual([2, 3]);
    const a2 = await getJson(origin + a1.body.links.next);
    expect(seqs(a2.body)).toEqual([4]);
    expect(a2.body.links.next).toBeNull();
    expect(seqs((await getJson(`${base}?sequencenumber=gte:4&order=desc`)).body)).toEqual([5, 4]);
    expect(seqs((await getJson(`${base}?sequencenumber=gt:5`)).body)).toEqual([]);
    expect((await getJson(`${base}/6`)).status).toBe(404);

    const single = await getJson(`${base}/4`);
    expect(single.body).toEqual(all.body.messages[3]);
    expect((await getJson(`${base}?order=sideways`)).status).toBe(400);
  });

  it('transactions/{id}: transfers, NFT transfers, scheduled flag', async () => {
    const resp = await new TransferTransaction().addHbarTransfer('0.0.2', new Hbar(-2)).addHbarTransfer(net.config.payTo, new Hbar(2)).setTransactionMemo('hi').execute(client);
    await resp.getReceipt(client);
    const { status, body } = await getJson(`${net.mirrorUrl}/transactions/${mirrorTxId(resp.transactionId)}`);
    expect(status).toBe(200);
    expect(body.transactions.length).toBe(1);
    const tx = body.transactions[0];
    expect(tx).toMatchObject({
      transaction_id: mirrorTxId(resp.transactionId),
      result: 'SUCCESS',
      name: 'CRYPTOTRANSFER',
      scheduled: false,
      nonce: 0,
      node: '0.0.3',
      memo_base64: Buffer.from('hi').toString('base64'),
      nft_transfers: [],
      token_transfers: [],
    });
    expect(tx.consensus_timestamp).toMatch(TS);
    expect(tx.valid_start_timestamp).toMatch(TS);
    expect(typeof tx.charged_tx_fee).toBe('number');
    expect(tx.charged_tx_fee).toBeGreaterThan(0);
    const byAccount = Object.fromEntries(tx.transfers.map((t: { account: string; amount: number }) => [t.account, t.amount]));
    expect(byAccount[net.config.payTo]).toBe(200_000_000);
    expect(byAccount['0.0.2']).toBe(-200_000_000 - tx.charged_tx_fee);
    for (const t of tx.transfers) expect(t.is_approval).toBe(false);

    // A scheduled transaction shares the id with its ScheduleCreate; `scheduled` tells them apart.
    const sched = await (
      await new ScheduleCreateTransaction()
        .setScheduledTransaction(new TransferTransaction().addHbarTransfer('0.0.2', -1).addHbarTransfer(net.config.payTo, 1))
        .execute(client)
    ).getReceipt(client);
    const sid = mirrorTxId(sched.scheduledTransactionId!);
    const both = await getJson(`${net.mirrorUrl}/transactions/${sid}`);
    expect(both.body.transactions.map((t: { name: string; scheduled: boolean }) => [t.name, t.scheduled])).toEqual([
      ['SCHEDULECREATE', false],
      ['CRYPTOTRANSFER', true],
    ]);
    const onlyScheduled = await getJson(`${net.mirrorUrl}/transactions/${sid}?scheduled=true`);
    expect(onlyScheduled.body.transactions.length).toBe(1);

    const s = await getJson(`${net.mirrorUrl}/schedules/${sched.scheduleId}`);
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({
      schedule_id: sched.scheduleId!.toString(),
      creator_account_id: '0.0.2',
      payer_account_id: '0.0.2',
      deleted: false,
      admin_key: null,
      memo: '',
      wait_for_expiry: false,
    });
    expect(s.body.executed_timestamp).toMatch(TS);
    expect(s.body.consensus_timestamp).toMatch(TS);
    expect(typeof s.body.transaction_body).toBe('string');
    expect(s.body.signatures.length).toBeGreaterThan(0);
    expect(s.body.signatures[0]).toMatchObject({ type: 'ED25519' });
    expect(Object.keys(s.body.signatures[0]).sort()).toEqual(['consensus_timestamp', 'public_key_prefix', 'signature', 'type']);
  });

  it('answers 404 in the mirror error shape for unknown entities', async () => {
    const notFound = { _status: { messages: [{ message: 'Not found' }] } };
    for (const path of [
      'accounts/0.0.999999',
      'tokens/0.0.999999',
      'tokens/0.0.999999/nfts/1',
      'topics/0.0.999999/messages',
      'topics/0.0.999999/messages/1',
      'transactions/0.0.2-1700000000-000000000',
      'schedules/0.0.999999',
    ]) {
      const r = await getJson(`${net.mirrorUrl}/${path}`);
      expect([path, r.status]).toEqual([path, 404]);
      expect(r.body).toEqual(notFound);
    }
  });
});
