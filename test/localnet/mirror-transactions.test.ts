// The mirror's account views the reliability audits read (issue 13, item 3): /transactions?account.id=
// with its filters and paging, and burned or wiped NFTs as the mirror shows them. Driven through the SDK.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountId,
  Client,
  Hbar,
  PrivateKey,
  TokenBurnTransaction,
  TokenMintTransaction,
  TokenWipeTransaction,
  TransferTransaction,
} from '@hashgraph/sdk';
import type { Localnet } from '../../localnet/index.js';
import { closeTestLocalnet, getJson, openTestLocalnet, sdkClient, statusOf } from './harness.js';

let net: Localnet;
let client: Client;
let tmp: { dir: string; cleanup(): void };
const TS = /^\d{10}\.\d{9}$/;
const TXID = /^0\.0\.\d+-\d{10}-\d{9}$/;

beforeAll(async () => {
  ({ tmp, net, client } = await openTestLocalnet('mirror-tx'));
});
afterAll(() => closeTestLocalnet({ tmp, net, client }));

describe('mirror transactions?account.id and deleted NFTs', () => {
  it('lists an account\'s transactions newest first, with the mirror fields, filters and links.next paging', async () => {
    const [a, b, c] = net.config.accounts;
    const fromA = sdkClient(net.config, a);
    try {
      // a pays b three times, c pays a once (a is credited), and a fails one transfer at consensus
      for (const amount of [1, 2, 3]) {
        await (await new TransferTransaction().addHbarTransfer(a.accountId, Hbar.fromTinybars(-amount)).addHbarTransfer(b.accountId, Hbar.fromTinybars(amount)).execute(fromA)).getReceipt(fromA);
      }
      const fromC = sdkClient(net.config, c);
      try {
        await (await new TransferTransaction().addHbarTransfer(c.accountId, Hbar.fromTinybars(-7)).addHbarTransfer(a.accountId, Hbar.fromTinybars(7)).execute(fromC)).getReceipt(fromC);
      } finally {
        fromC.close();
      }
      const huge = Hbar.fromTinybars('9000000000000000000');
      const failed = await statusOf(async () =>
        (await new TransferTransaction().addHbarTransfer(a.accountId, huge.negated()).addHbarTransfer(b.accountId, huge).execute(fromA)).getReceipt(fromA),
      );
      expect(failed).not.toBe('NO_ERROR');
    } finally {
      fromA.close();
    }

    const all = await getJson(`${net.mirrorUrl}/transactions?account.id=${a.accountId}&limit=100`);
    expect(all.status).toBe(200);
    const txs = all.body.transactions as any[];
    expect(all.body.links).toEqual({ next: null });
    const stamps = txs.map((t) => t.consensus_timestamp);
    expect([...stamps].sort().reverse()).toEqual(stamps); // newest first by default
    for (const t of txs) {
      expect(t.consensus_timestamp).toMatch(TS);
      expect(t.transaction_id).toMatch(TXID);
      expect(typeof t.charged_tx_fee).toBe('number');
      expect(t).toHaveProperty('nft_transfers');
      expect(t).toHaveProperty('token_transfers');
      const involved = t.transaction_id.startsWith(`${a.accountId}-`) || t.transfers.some((x: any) => x.account === a.accountId) || t.nft_transfers.some((x: any) => x.sender_account_id === a.accountId || x.receiver_account_id === a.accountId);
      expect(involved, JSON.stringify(t)).toBe(true);
    }
    const toB = txs.filter((t) => t.name === 'CRYPTOTRANSFER' && t.result === 'SUCCESS' && t.transfers.some((x: any) => x.account === b.accountId && x.amount > 0 && x.amount <= 3));
    expect(toB.map((t) => t.transfers.find((x: any) => x.account === b.accountId).amount)).toEqual([3, 2, 1]);

    // result=fail: exactly the transfer that failed at consensus, paid by a
    const fail = await getJson(`${net.mirrorUrl}/transactions?account.id=${a.accountId}&result=fail`);
    expect(fail.body.transactions).toHaveLength(1);
    expect(fail.body.transactions[0]).toMatchObject({ name: 'CRYPTOTRANSFER' });
    expect(fail.body.transactions[0].result).not.toBe('SUCCESS');
    expect(fail.body.transactions[0].transaction_id.startsWith(`${a.accountId}-`)).toBe(true);
    const ok = await getJson(`${net.mirrorUrl}/transactions?account.id=${a.accountId}&result=success`);
    expect(ok.body.transactions.length).toBe(txs.length - 1);

    // type=credit: a received HBAR (c's 7 tinybars; the node's fee share is credited to others, never to a)
    const credit = await getJson(`${net.mirrorUrl}/transactions?account.id=${a.accountId}&type=credit&transactiontype=cryptotransfer`);
    expect(credit.body.transactions.map((t: any) => t.transfers.find((x: any) => x.account === a.accountId).amount)).toEqual([7]);
    const other = await getJson(`${net.mirrorUrl}/transactions?account.id=${a.accountId}&transactiontype=TOKENMINT`);
    expect(other.body.transactions).toEqual([]);

    // paging: limit=2 newest first, following links.next until the end gives every row once, in order
    const seen: string[] = [];
    let next: string | null = `/api/v1/transactions?account.id=${a.accountId}&limit=2`;
    while (next) {
      const page = await getJson(`${net.mirrorUrl.replace(/\/api\/v1$/, '')}${next}`);
      expect(page.status, next).toBe(200);
      expect(page.body.transactions.length).toBeLessThanOrEqual(2);
      seen.push(...page.body.transactions.map((t: any) => t.consensus_timestamp));
      next = page.body.links.next;
    }
    expect(seen).toEqual(stamps);
    // ascending with a timestamp bound
    const asc = await getJson(`${net.mirrorUrl}/transactions?account.id=${a.accountId}&order=asc&timestamp=gt:${stamps[stamps.length - 1]}`);
    expect(asc.body.transactions.map((t: any) => t.consensus_timestamp)).toEqual([...stamps].reverse().slice(1));
    const lt = await getJson(`${net.mirrorUrl}/transactions?account.id=${a.accountId}&timestamp=lt:${stamps[0]}&timestamp=gte:${stamps[2]}`);
    expect(lt.body.transactions.map((t: any) => t.consensus_timestamp)).toEqual(stamps.slice(1, 3));

    // bad parameters answer 400 in the mirror's error shape
    for (const bad of ['account.id=x', 'result=maybe', 'type=both', 'order=up', 'limit=0', 'timestamp=gt:soon', 'transactiontype=1']) {
      const r = await getJson(`${net.mirrorUrl}/transactions?${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.body._status.messages[0].message).toMatch(/Invalid parameter/);
    }
  });

  it('burned and wiped NFTs: deleted true and no account on the token view, gone from the account\'s NFTs, burn and wipe in its transactions', async () => {
    const tokenId = net.config.passportTokenId;
    const agent = net.config.accounts[3];
    const serials = (await (await new TokenMintTransaction().setTokenId(tokenId).setMetadata([Buffer.from('burn-me'), Buffer.from('wipe-me')]).execute(client)).getReceipt(client)).serials.map(Number);
    const [burned, wiped] = serials;
    await (await new TokenBurnTransaction().setTokenId(tokenId).setSerials([burned]).execute(client)).getReceipt(client);
    await (await new TransferTransaction().addNftTransfer(tokenId, wiped, AccountId.fromString(net.config.treasury), AccountId.fromString(agent.accountId)).execute(client)).getReceipt(client);
    const before = await getJson(`${net.mirrorUrl}/accounts/${agent.accountId}/nfts?token.id=${tokenId}`);
    expect(before.body.nfts.map((n: any) => n.serial_number)).toContain(wiped);
    await (await new TokenWipeTransaction().setTokenId(tokenId).setAccountId(agent.accountId).setSerials([wiped]).execute(client)).getReceipt(client);

    for (const serial of [burned, wiped]) {
      const one = await getJson(`${net.mirrorUrl}/tokens/${tokenId}/nfts/${serial}`);
      expect(one.status).toBe(200);
      expect(one.body).toMatchObject({ token_id: tokenId, serial_number: serial, deleted: true, account_id: null });
    }
    const after = await getJson(`${net.mirrorUrl}/accounts/${agent.accountId}/nfts?token.id=${tokenId}`);
    expect(after.body.nfts.map((n: any) => n.serial_number)).not.toContain(wiped);
    const treasury = await getJson(`${net.mirrorUrl}/accounts/${net.config.treasury}/nfts?token.id=${tokenId}`);
    expect(treasury.body.nfts.map((n: any) => n.serial_number)).not.toContain(burned);

    // the agent's history shows the NFT arriving and being wiped (a transfer out to no one)
    const hist = await getJson(`${net.mirrorUrl}/transactions?account.id=${agent.accountId}&limit=5`);
    const [wipe, arrive] = hist.body.transactions as any[];
    expect(wipe).toMatchObject({ name: 'TOKENWIPE', result: 'SUCCESS' });
    expect(wipe.nft_transfers).toEqual([expect.objectContaining({ token_id: tokenId, serial_number: wiped, sender_account_id: agent.accountId, receiver_account_id: null })]);
    expect(arrive.nft_transfers).toEqual([expect.objectContaining({ token_id: tokenId, serial_number: wiped, receiver_account_id: agent.accountId })]);
    const burns = await getJson(`${net.mirrorUrl}/transactions?transactiontype=TOKENBURN&limit=1`);
    expect(burns.body.transactions[0].nft_transfers).toEqual([expect.objectContaining({ serial_number: burned, receiver_account_id: null })]);
  });
});
