// Persistence (journal replay across a restart) and fault injection (BUSY, slow consensus, outage).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountBalanceQuery,
  AccountId,
  Client,
  PrivateKey,
  ScheduleCreateTransaction,
  ScheduleSignTransaction,
  TokenMintTransaction,
  TopicMessageSubmitTransaction,
  Transaction,
  TransferTransaction,
} from '@hashgraph/sdk';
import type { Localnet } from '../../localnet/index.js';
import { proto } from '../../localnet/proto.js';
import { handleQuery } from '../../localnet/queries.js';
import { tinybarBalance, getJson, sdkClient, startTestLocalnet, statusOf, tempDataDir } from './harness.js';

let net: Localnet;
let client: Client;
let tmp: { dir: string; cleanup(): void };

beforeAll(async () => {
  tmp = tempDataDir('journal');
  net = await startTestLocalnet(tmp.dir);
  client = sdkClient(net.config);
});

afterAll(async () => {
  client?.close();
  await net?.stop();
  tmp?.cleanup();
});

describe('faults', () => {
  it('answers BUSY N times, then applies the transfer exactly once', async () => {
    const to = net.config.accounts[2].accountId;
    const before = await tinybarBalance(client, to);
    net.faults.busy(3);
    const resp = await new TransferTransaction().addHbarTransfer('0.0.2', -7).addHbarTransfer(to, 7).execute(client);
    expect((await resp.getReceipt(client)).status.toString()).toBe('SUCCESS');
    expect(net.faults.state().busyRemaining).toBe(0);
    expect(await tinybarBalance(client, to)).toBe(before + 700_000_000n); // 7 HBAR
    const vs = resp.transactionId.validStart!;
    const id = `0.0.2-${vs.seconds}-${String(vs.nanos).padStart(9, '0')}`;
    const { body } = await getJson(`${net.mirrorUrl}/transactions/${id}`);
    expect(body.transactions.length).toBe(1);
  });

  it('BUSY through the HTTP control endpoint', async () => {
    const base = net.mirrorUrl.replace(/\/api\/v1$/, '');
    const res = await fetch(`${base}/__control/busy`, { method: 'POST', body: JSON.stringify({ n: 2 }) });
    expect(((await res.json()) as { busyRemaining: number }).busyRemaining).toBe(2);
    const r = await (await new TransferTransaction().addHbarTransfer('0.0.2', -1).addHbarTransfer(net.config.payTo, 1).execute(client)).getReceipt(client);
    expect(r.status.toString()).toBe('SUCCESS');
    expect(((await (await fetch(`${base}/__control/state`)).json()) as { busyRemaining: number }).busyRemaining).toBe(0);
  });

  it('delays consensus: receipts are UNKNOWN meanwhile, then SUCCESS, applied once', async () => {
    const to = net.config.accounts[3].accountId;
    const before = await tinybarBalance(client, to);
    net.faults.delayConsensus(1.5);
    const resp = await new TransferTransaction().addHbarTransfer('0.0.2', -4).addHbarTransfer(to, 4).execute(client);
    const vs = resp.transactionId.validStart!;
    const validStartNs = BigInt(vs.seconds.toString()) * 1_000_000_000n + BigInt(vs.nanos.toString());
    // Accepted but not yet at consensus: the node answers receipt status UNKNOWN, the mirror has nothing.
    expect(net.engine.lookup({ payer: 2, validStartNs, nonce: 0, scheduled: false })).toBe('pending');
    const query = proto.Query.encode({
      transactionGetReceipt: { transactionID: resp.transactionId._toProtobuf() },
    }).finish();
    const answer = handleQuery(net.engine, query).transactionGetReceipt!;
    expect(answer.header?.nodeTransactionPrecheckCode ?? 0).toBe(proto.ResponseCodeEnum.OK);
    expect(answer.receipt?.status).toBe(proto.ResponseCodeEnum.UNKNOWN);
    const id = `0.0.2-${vs.seconds}-${String(vs.nanos).padStart(9, '0')}`;
    expect((await getJson(`${net.mirrorUrl}/transactions/${id}`)).status).toBe(404);
    expect(await tinybarBalance(client, to)).toBe(before);
    expect((await resp.getReceipt(client)).status.toString()).toBe('SUCCESS');
    expect(await tinybarBalance(client, to)).toBe(before + 400_000_000n); // 4 HBAR
  });

  it('fails calls during an outage (gRPC UNAVAILABLE) and serves them again afterwards', async () => {
    net.faults.unavailable(0.5);
    // With a single node the SDK parks it and gives up: callers see an error, never a wrong answer.
    await expect(new AccountBalanceQuery().setAccountId('0.0.2').execute(client)).rejects.toThrow();
    await new Promise((r) => setTimeout(r, 1_500)); // outage over and the node's backoff (<= 1 s) elapsed
    const b = await new AccountBalanceQuery().setAccountId('0.0.2').execute(client);
    expect(b.hbars.toTinybars().toNumber()).toBeGreaterThan(0);
  });
});

describe('journal', () => {
  it('replays on restart: same ids, balances, NFTs, topic messages, pending schedules and duplicates', async () => {
    const cfg = net.config;
    const opKey = PrivateKey.fromStringDer(cfg.operator.privateKey);
    const agent = cfg.accounts[4];
    const agentKey = PrivateKey.fromStringDer(agent.privateKey);

    // Some history: a mint + NFT transfer, topic messages, a pending schedule, a signed transfer.
    const mint = await (await new TokenMintTransaction().setTokenId(cfg.passportTokenId).setMetadata([Buffer.from('keep')]).execute(client)).getReceipt(client);
    const serial = mint.serials[0].toNumber();
    await (
      await (
        await new TransferTransaction()
          .addNftTransfer(cfg.passportTokenId, serial, AccountId.fromString(cfg.treasury), AccountId.fromString(agent.accountId))
          .freezeWith(client)
          .sign(opKey)
      ).execute(client)
    ).getReceipt(client);
    for (const m of ['a', 'b'])
      await (await new TopicMessageSubmitTransaction().setTopicId(cfg.topics.a2a).setMessage(m).execute(client)).getReceipt(client);
    const sched = await (
      await new ScheduleCreateTransaction()
        .setScheduledTransaction(new TransferTransaction().addHbarTransfer(agent.accountId, -3).addHbarTransfer(cfg.escrow, 3))
        .execute(client)
    ).getReceipt(client);
    const signed = await new TransferTransaction().addHbarTransfer('0.0.2', -1).addHbarTransfer(cfg.payTo, 1).freezeWith(client).signWithOperator(client);
    const signedBytes = signed.toBytes();
    await (await Transaction.fromBytes(signedBytes).execute(client)).getReceipt(client);

    const ids = [cfg.operator.accountId, cfg.treasury, cfg.escrow, cfg.payTo, agent.accountId];
    const balances = await Promise.all(ids.map((id) => tinybarBalance(client, id)));
    const nft = (await getJson(`${net.mirrorUrl}/tokens/${cfg.passportTokenId}/nfts/${serial}`)).body;
    const messages = (await getJson(`${net.mirrorUrl}/topics/${cfg.topics.a2a}/messages`)).body;

    client.close();
    await net.stop();
    net = await startTestLocalnet(tmp.dir);
    client = sdkClient(net.config);

    const { node, mirrorUrl, ...stable } = net.config;
    const { node: _n, mirrorUrl: _m, ...stableBefore } = cfg;
    expect(stable).toEqual(stableBefore);
    expect(await Promise.all(ids.map((id) => tinybarBalance(client, id)))).toEqual(balances);
    expect((await getJson(`${net.mirrorUrl}/tokens/${cfg.passportTokenId}/nfts/${serial}`)).body).toEqual(nft);
    expect((await getJson(`${net.mirrorUrl}/topics/${cfg.topics.a2a}/messages`)).body).toEqual(messages);
    expect(await statusOf(() => Transaction.fromBytes(signedBytes).execute(client))).toBe('DUPLICATE_TRANSACTION');

    // The pending schedule survived: the agent's signature now executes it.
    const before = await tinybarBalance(client, cfg.escrow);
    const sign = await new ScheduleSignTransaction().setScheduleId(sched.scheduleId!).freezeWith(client).sign(agentKey);
    expect((await (await sign.execute(client)).getReceipt(client)).status.toString()).toBe('SUCCESS');
    expect(await tinybarBalance(client, cfg.escrow)).toBe(before + 300_000_000n);
    void node;
    void mirrorUrl;
  });
});
