// The production ledger adapter against localnet: NFTs (mint, transfer, update metadata, wipe),
// chunked topic messages read back joined through the mirror client, schedules (create/sign/delete).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@hashgraph/sdk';
import { startLocalnet, type Localnet } from '../../localnet/index.js';
import { createLedgerClient } from '../../ledger/client.js';
import { parsePrivateKey, publicKeyFromMirror, verifySignature, signBytes } from '@agent-passport/core/keys';
import { MirrorClient } from '../../ledger/mirror.js';
import {
  buildHbarTransfer,
  checkTokenReceivable,
  createSchedule,
  deleteSchedule,
  mintNft,
  signSchedule,
  submitTopicMessage,
  transferNft,
  updateNftMetadata,
  wipeNft,
} from '../../ledger/operations.js';
import { LedgerError } from '../../ledger/errors.js';

let ln: Localnet;
let dir: string;
let client: Client;
let mirror: MirrorClient;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ledger-adapter-'));
  ln = await startLocalnet({ dataDir: dir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, facilitator: false });
  client = createLedgerClient({ network: 'local', node: ln.config.node, operator: ln.config.operator });
  mirror = new MirrorClient(ln.mirrorUrl);
});

afterAll(async () => {
  client?.close();
  await ln?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('ledger adapter on localnet', () => {
  it('mints an NFT with metadata, moves it to its owner, updates the metadata and wipes it', async () => {
    const tokenId = ln.config.passportTokenId;
    const owner = ln.config.accounts[0].accountId;
    const can = await checkTokenReceivable(mirror, owner, tokenId);
    expect(can.canReceive).toBe(true);

    const minted = await mintNft(client, { tokenId, metadata: [new TextEncoder().encode('v1:bronze')] });
    expect(minted.status).toBe('SUCCESS');
    expect(minted.serials?.length).toBe(1);
    const serial = minted.serials![0];

    const moved = await transferNft(client, { tokenId, serial, from: ln.config.treasury, to: owner });
    expect(moved.status).toBe('SUCCESS');
    let nft = await mirror.getNft(tokenId, BigInt(serial));
    expect(nft?.account_id).toBe(owner);
    expect(Buffer.from(nft!.metadata, 'base64').toString()).toBe('v1:bronze');
    const owned = await mirror.getAccountNfts(owner, { tokenId });
    expect(owned.map((n) => String(n.serial_number))).toContain(serial);

    await updateNftMetadata(client, { tokenId, serials: [serial], metadata: new TextEncoder().encode('v1:gold') });
    nft = await mirror.getNft(tokenId, BigInt(serial));
    expect(Buffer.from(nft!.metadata, 'base64').toString()).toBe('v1:gold');

    await wipeNft(client, { tokenId, accountId: owner, serials: [serial] });
    nft = await mirror.getNft(tokenId, BigInt(serial));
    expect(nft === null || nft.deleted === true || nft.account_id === null).toBe(true);
  });

  it('refuses NFT metadata over 100 bytes before submitting', async () => {
    await expect(mintNft(client, { tokenId: ln.config.passportTokenId, metadata: [new Uint8Array(101)] })).rejects.toBeInstanceOf(LedgerError);
  });

  it('submits a chunked topic message and reads it back joined', async () => {
    const topicId = ln.config.topics.a2a;
    const text = JSON.stringify({ v: 1, type: 'test', body: 'x'.repeat(3000) + '-end' });
    const r = await submitTopicMessage(client, { topicId, message: text });
    expect(r.status).toBe('SUCCESS');
    expect(r.chunkTransactionIds?.length).toBe(3);
    const { messages } = await mirror.getJoinedTopicMessages(topicId);
    const found = messages.find((m) => m.text() === text);
    expect(found).toBeDefined();
    expect(found!.chunks).toBe(3);
    // a short one next to it stays unchunked
    await submitTopicMessage(client, { topicId, message: 'short' });
    const again = await mirror.getJoinedTopicMessages(topicId, { afterSequence: found!.lastSequenceNumber });
    expect(again.messages.map((m) => m.text())).toEqual(['short']);
  });

  it('creates, signs (executes) and deletes schedules', async () => {
    const payer = ln.config.accounts[1];
    const payerKey = parsePrivateKey(payer.privateKey);
    const before = await mirror.getHbarBalance(ln.config.escrow);
    const operatorKey = parsePrivateKey(ln.config.operator.privateKey);

    const created = await createSchedule(client, {
      scheduled: buildHbarTransfer({ from: payer.accountId, to: ln.config.escrow, amountTinybars: 12_345n }),
      adminKey: operatorKey.publicKey,
      memo: `escrow test ${Date.now()}`,
    });
    expect(created.scheduleId).toBeDefined();
    const pending = await mirror.getSchedule(created.scheduleId!);
    expect(pending?.executed_timestamp ?? null).toBeNull();

    await signSchedule(client, { scheduleId: created.scheduleId!, signers: [payerKey] });
    const executed = await mirror.getSchedule(created.scheduleId!);
    expect(executed?.executed_timestamp).toBeTruthy();
    expect((await mirror.getHbarBalance(ln.config.escrow))! - before!).toBe(12_345n);

    const other = await createSchedule(client, {
      scheduled: buildHbarTransfer({ from: payer.accountId, to: ln.config.escrow, amountTinybars: 777n }),
      adminKey: operatorKey.publicKey,
      memo: `to delete ${Date.now()}`,
    });
    await deleteSchedule(client, { scheduleId: other.scheduleId! });
    expect((await mirror.getSchedule(other.scheduleId!))?.deleted).toBe(true);
  });

  it('verifies signatures with ED25519 and ECDSA keys read from the mirror', async () => {
    for (const a of ln.config.accounts.slice(0, 2)) {
      const account = await mirror.getAccount(a.accountId);
      const pub = publicKeyFromMirror(account!.key);
      expect(pub).not.toBeNull();
      const sig = signBytes(parsePrivateKey(a.privateKey), 'challenge-123');
      expect(verifySignature(pub!, 'challenge-123', sig)).toBe(true);
      expect(verifySignature(pub!, 'challenge-124', sig)).toBe(false);
    }
  });
});
