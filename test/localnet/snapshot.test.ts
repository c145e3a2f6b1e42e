// Restart from a state snapshot: the same state a full journal replay gives, only the entries after
// the snapshot replayed, a snapshot that does not match its journal ignored, a torn journal line cut.
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { appendFileSync, copyFileSync, cpSync, existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { deserialize, serialize } from 'node:v8';
import {
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
import { startLocalnet, type Localnet } from '../../localnet/index.js';
import { tinybarBalance, getJson, sdkClient, statusOf, tempDataDir } from './harness.js';

const open: { net: Localnet; client: Client }[] = [];
const dirs: { cleanup(): void }[] = [];

async function start(dataDir: string, snapshotEvery = 4): Promise<{ net: Localnet; client: Client }> {
  const net = await startLocalnet({ dataDir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, facilitator: false, snapshotEvery });
  const o = { net, client: sdkClient(net.config) };
  open.push(o);
  return o;
}

async function stop(o: { net: Localnet; client: Client }): Promise<void> {
  o.client.close();
  await o.net.stop();
  open.splice(open.indexOf(o), 1);
}

function dir(prefix: string): string {
  const t = tempDataDir(prefix);
  dirs.push(t);
  return t.dir;
}

/** The ledger state as plain data (prototypes dropped the way a snapshot drops them). */
const stateOf = (net: Localnet) => deserialize(serialize(net.engine.state)) as Record<string, unknown>;

async function transfer(c: Client, to: string, hbar: number): Promise<void> {
  const r = await (await new TransferTransaction().addHbarTransfer('0.0.2', -hbar).addHbarTransfer(to, hbar).execute(c)).getReceipt(c);
  expect(r.status.toString()).toBe('SUCCESS');
}

afterEach(async () => {
  for (const o of [...open]) await stop(o);
});
afterAll(() => {
  for (const d of dirs) d.cleanup();
});

describe('localnet snapshots', () => {
  it('a restart from the snapshot rebuilds the state a full replay rebuilds, pending schedules and duplicates included', async () => {
    const dataDir = dir('snap');
    const a = await start(dataDir);
    const cfg = a.net.config;
    const opKey = PrivateKey.fromStringDer(cfg.operator.privateKey);
    const agent = cfg.accounts[1];

    // History of every kind the service writes: mint, NFT transfer, topic messages, a schedule left
    // pending, transfers (some taken by the periodic snapshots every 4 entries, some after the last).
    const mint = await (await new TokenMintTransaction().setTokenId(cfg.passportTokenId).setMetadata([Buffer.from('s')]).execute(a.client)).getReceipt(a.client);
    const serial = mint.serials[0].toNumber();
    const nftMove = await new TransferTransaction()
      .addNftTransfer(cfg.passportTokenId, serial, AccountId.fromString(cfg.treasury), AccountId.fromString(agent.accountId))
      .freezeWith(a.client)
      .sign(opKey);
    expect((await (await nftMove.execute(a.client)).getReceipt(a.client)).status.toString()).toBe('SUCCESS');
    for (const m of ['one', 'two', 'three'])
      await (await new TopicMessageSubmitTransaction().setTopicId(cfg.topics.a2a).setMessage(m).execute(a.client)).getReceipt(a.client);
    const sched = await (
      await new ScheduleCreateTransaction()
        .setScheduledTransaction(new TransferTransaction().addHbarTransfer(agent.accountId, -2).addHbarTransfer(cfg.escrow, 2))
        .execute(a.client)
    ).getReceipt(a.client);
    const signed = (await new TransferTransaction().addHbarTransfer('0.0.2', -1).addHbarTransfer(cfg.payTo, 1).freezeWith(a.client).signWithOperator(a.client)).toBytes();
    await (await Transaction.fromBytes(signed).execute(a.client)).getReceipt(a.client);
    for (let i = 1; i <= 3; i++) await transfer(a.client, cfg.accounts[2].accountId, i);

    const before = stateOf(a.net);
    await stop(a); // a clean stop writes a final snapshot
    expect(existsSync(join(dataDir, 'snapshot.v8'))).toBe(true);

    // The same journal without the snapshot: the full replay is the reference.
    const fullDir = dir('snapfull');
    cpSync(dataDir, fullDir, { recursive: true });
    rmSync(join(fullDir, 'snapshot.v8'));

    const fromSnap = await start(dataDir);
    expect(fromSnap.net.engine.lastReplay).toEqual({ fromSnapshot: true, replayed: 0 });
    const full = await start(fullDir);
    expect(full.net.engine.lastReplay.fromSnapshot).toBe(false);
    expect(full.net.engine.lastReplay.replayed).toBeGreaterThan(10);

    expect(stateOf(fromSnap.net)).toStrictEqual(before);
    expect(stateOf(fromSnap.net)).toStrictEqual(stateOf(full.net));
    for (const path of [
      `/transactions?limit=100&order=desc`,
      `/accounts/${agent.accountId}`,
      `/tokens/${cfg.passportTokenId}/nfts/${serial}`,
      `/topics/${cfg.topics.a2a}/messages`,
      `/schedules/${sched.scheduleId!.toString()}`,
    ]) {
      const [x, y] = await Promise.all([getJson(fromSnap.net.mirrorUrl + path), getJson(full.net.mirrorUrl + path)]);
      expect(x.status, path).toBe(200);
      expect(x.body, path).toEqual(y.body);
    }

    // Duplicate detection survives: the same signed bytes are refused, not applied twice.
    expect(await statusOf(() => Transaction.fromBytes(signed).execute(fromSnap.client))).toBe('DUPLICATE_TRANSACTION');
    // The pending schedule survives: the agent's signature executes it once.
    const escrowBefore = await tinybarBalance(fromSnap.client, cfg.escrow);
    const sign = await new ScheduleSignTransaction().setScheduleId(sched.scheduleId!).freezeWith(fromSnap.client).sign(PrivateKey.fromStringDer(agent.privateKey));
    expect((await (await sign.execute(fromSnap.client)).getReceipt(fromSnap.client)).status.toString()).toBe('SUCCESS');
    expect(await tinybarBalance(fromSnap.client, cfg.escrow)).toBe(escrowBefore + 200_000_000n);
  });

  it('after a kill, replays only the journal written since the last snapshot', async () => {
    const dataDir = dir('snapkill');
    const a = await start(dataDir, 1_000_000); // no periodic snapshot in this test
    const to = a.net.config.accounts[3].accountId;
    await stop(a);
    const snapAtStop = readFileSync(join(dataDir, 'snapshot.v8'));

    const b = await start(dataDir, 1_000_000);
    for (let i = 1; i <= 3; i++) await transfer(b.client, to, i);
    const balance = await tinybarBalance(b.client, to);
    const state = stateOf(b.net);
    await stop(b);
    // As if killed: the snapshot on disk is the one from before the three transfers.
    writeFileSync(join(dataDir, 'snapshot.v8'), snapAtStop);

    const c = await start(dataDir);
    expect(c.net.engine.lastReplay).toEqual({ fromSnapshot: true, replayed: 3 });
    expect(await tinybarBalance(c.client, to)).toBe(balance);
    expect(stateOf(c.net)).toStrictEqual(state);
  });

  it('ignores a snapshot that does not belong to the journal or cannot be read, and replays from genesis', async () => {
    const first = dir('snapa');
    const a = await start(first);
    await transfer(a.client, a.net.config.payTo, 1);
    await stop(a);
    const other = dir('snapb');
    const b = await start(other);
    await transfer(b.client, b.net.config.payTo, 2);
    const bState = stateOf(b.net);
    await stop(b);

    copyFileSync(join(first, 'snapshot.v8'), join(other, 'snapshot.v8')); // another network's snapshot
    const c = await start(other);
    expect(c.net.engine.lastReplay.fromSnapshot).toBe(false);
    expect(stateOf(c.net)).toStrictEqual(bState);
    await stop(c);

    writeFileSync(join(other, 'snapshot.v8'), 'not a snapshot');
    const d = await start(other);
    expect(d.net.engine.lastReplay.fromSnapshot).toBe(false);
    expect(stateOf(d.net)).toStrictEqual(bState);
  });

  it('cuts a torn last journal line so the entries appended after it replay', async () => {
    const dataDir = dir('snaptorn');
    const a = await start(dataDir);
    const to = a.net.config.accounts[4].accountId;
    await stop(a);
    rmSync(join(dataDir, 'snapshot.v8'));
    appendFileSync(join(dataDir, 'journal.jsonl'), '{"t":"17'); // a crash in the middle of a write

    const b = await start(dataDir);
    await transfer(b.client, to, 5);
    const balance = await tinybarBalance(b.client, to);
    await stop(b);
    rmSync(join(dataDir, 'snapshot.v8')); // replay the whole journal, across the place of the torn line

    const c = await start(dataDir);
    expect(c.net.engine.lastReplay.fromSnapshot).toBe(false);
    expect(await tinybarBalance(c.client, to)).toBe(balance);
  });

  it('keeps the keys other tools merged into localnet.json across a restart, and rewrites its own', async () => {
    const dataDir = dir('snapjson');
    const jsonPath = join(dataDir, 'out', 'localnet.json');
    const open1 = await startLocalnet({ dataDir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, facilitator: false, localnetJsonPath: jsonPath });
    const first = JSON.parse(readFileSync(jsonPath, 'utf8'));
    await open1.stop();
    // what the dev launcher adds after localnet's first start
    writeFileSync(jsonPath, JSON.stringify({ ...first, apiUrl: 'http://127.0.0.1:3000', adminToken: 'dev-token', node: { address: 'stale', accountId: '0.0.3' } }));
    const net = await startLocalnet({ dataDir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, facilitator: false, localnetJsonPath: jsonPath });
    try {
      const after = JSON.parse(readFileSync(jsonPath, 'utf8'));
      expect(after).toMatchObject({ apiUrl: 'http://127.0.0.1:3000', adminToken: 'dev-token', passportTokenId: first.passportTokenId });
      expect(after.node.address).toBe(net.grpcAddress);
    } finally {
      await net.stop();
    }
  });
});
