// What the marketplace escrow (DESIGN.md 6) relies on in localnet's schedules, checked with the real
// SDK as on Hedera: an explicit expiration (the task workflow renews before it), a schedule past it
// can be neither signed nor deleted (INVALID_SCHEDULE_ID) and never moves money; a ScheduleSign paid
// by another account (the service) counts the poster's signature; the schedule's creator pays the
// scheduled transfer's fee, so the poster's balance moves by the amount only; a scheduled transfer
// that fails (balance) is recorded as the scheduled child with its own status on the mirror;
// ScheduleGetInfo tells executed and deleted apart until the expiration purges the schedule.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccountCreateTransaction,
  AccountId,
  Client,
  Hbar,
  PrivateKey,
  ScheduleCreateTransaction,
  ScheduleDeleteTransaction,
  ScheduleInfoQuery,
  ScheduleSignTransaction,
  Timestamp,
  TransactionId,
  TransactionReceiptQuery,
  TransferTransaction,
} from '@hashgraph/sdk';
import type { Localnet } from '../../localnet/index.js';
import { MirrorClient } from '../../ledger/mirror.js';
import { closeTestLocalnet, openTestLocalnet, statusOf, tinybarBalance } from './harness.js';

let net: Localnet;
let client: Client;
let tmp: { dir: string; cleanup(): void };
let mirror: MirrorClient;

const balanceOf = (id: string | AccountId): Promise<bigint> => tinybarBalance(client, id);

async function newAccount(key: PrivateKey, hbar: number): Promise<AccountId> {
  const r = await (await new AccountCreateTransaction().setKeyWithoutAlias(key.publicKey).setInitialBalance(new Hbar(hbar)).execute(client)).getReceipt(client);
  return r.accountId!;
}

async function escrowSchedule(poster: AccountId, escrow: AccountId, tinybars: number, expiresAt: Date) {
  const tx = new ScheduleCreateTransaction()
    .setScheduledTransaction(new TransferTransaction().addHbarTransfer(poster, Hbar.fromTinybars(-tinybars)).addHbarTransfer(escrow, Hbar.fromTinybars(tinybars)))
    .setAdminKey(client.operatorPublicKey!)
    .setExpirationTime(Timestamp.fromDate(expiresAt))
    .setWaitForExpiry(false)
    .setScheduleMemo(`escrow ${tinybars}`);
  const response = await tx.execute(client);
  const r = await response.getReceipt(client);
  return { scheduleId: r.scheduleId!.toString(), createTxId: response.transactionId.toString() };
}

/** A ScheduleSign paid by the operator, signed by the poster only (what the API builds). */
async function posterSign(scheduleId: string, posterKey: PrivateKey) {
  const tx = new ScheduleSignTransaction()
    .setScheduleId(scheduleId)
    .setTransactionId(TransactionId.generate(client.operatorAccountId!))
    .setNodeAccountIds([AccountId.fromString(net.config.node.accountId)])
    .freeze();
  await tx.sign(posterKey);
  return (await tx.execute(client)).getReceipt(client);
}

beforeAll(async () => {
  ({ tmp, net, client } = await openTestLocalnet('sched-escrow'));
  mirror = new MirrorClient(net.mirrorUrl);
});

afterAll(() => closeTestLocalnet({ tmp, net, client }));

describe('escrow schedules on localnet', () => {
  it('a poster signature on an operator-paid ScheduleSign executes the transfer; the poster pays exactly the amount', async () => {
    const posterKey = PrivateKey.generateED25519();
    const poster = await newAccount(posterKey, 10);
    const escrow = await newAccount(PrivateKey.generateED25519(), 1);
    const { scheduleId, createTxId } = await escrowSchedule(poster, escrow, 123_456_789, new Date(Date.now() + 600_000));
    const p0 = await balanceOf(poster);
    const e0 = await balanceOf(escrow);
    await posterSign(scheduleId, posterKey);
    expect(await balanceOf(poster)).toBe(p0 - 123_456_789n);
    expect(await balanceOf(escrow)).toBe(e0 + 123_456_789n);
    const s = await mirror.getSchedule(scheduleId);
    expect(s?.executed_timestamp).toBeTruthy();
    const child = (await mirror.getTransactions(createTxId)).find((t) => t.scheduled === true);
    expect(child?.result).toBe('SUCCESS');
  });

  it('a scheduled transfer the poster cannot cover is recorded with its own failure; nothing moves', async () => {
    const posterKey = PrivateKey.generateED25519();
    const poster = await newAccount(posterKey, 1);
    const escrow = await newAccount(PrivateKey.generateED25519(), 1);
    const { scheduleId, createTxId } = await escrowSchedule(poster, escrow, 5 * 100_000_000, new Date(Date.now() + 600_000));
    const p0 = await balanceOf(poster);
    await posterSign(scheduleId, posterKey);
    expect(await balanceOf(poster)).toBe(p0);
    const child = (await mirror.getTransactions(createTxId)).find((t) => t.scheduled === true);
    expect(child?.result).toBe('INSUFFICIENT_ACCOUNT_BALANCE');
  });

  it('past its explicit expiration a schedule can be neither signed nor deleted, and never moves money', async () => {
    const posterKey = PrivateKey.generateED25519();
    const poster = await newAccount(posterKey, 10);
    const escrow = await newAccount(PrivateKey.generateED25519(), 1);
    const { scheduleId } = await escrowSchedule(poster, escrow, 100_000_000, new Date(Date.now() + 2_500));
    const p0 = await balanceOf(poster);
    await new Promise((r) => setTimeout(r, 3_500));
    expect(await statusOf(() => posterSign(scheduleId, posterKey))).toBe('INVALID_SCHEDULE_ID');
    expect(await statusOf(async () => (await new ScheduleDeleteTransaction().setScheduleId(scheduleId).execute(client)).getReceipt(client))).toBe('INVALID_SCHEDULE_ID');
    expect(await balanceOf(poster)).toBe(p0);
    expect((await mirror.getSchedule(scheduleId))?.executed_timestamp ?? null).toBeNull();
  });

  it('ScheduleGetInfo answers as Hedera: execution and deletion times while the schedule lives, INVALID_SCHEDULE_ID once its expiration purged it, whatever became of it', async () => {
    const posterKey = PrivateKey.generateED25519();
    const poster = await newAccount(posterKey, 10);
    const escrow = await newAccount(PrivateKey.generateED25519(), 1);
    const info = (id: string) => new ScheduleInfoQuery().setScheduleId(id).execute(client);
    const expiresAt = new Date(Date.now() + 3_000);
    const executed = await escrowSchedule(poster, escrow, 1_000, expiresAt);
    const deleted = await escrowSchedule(poster, escrow, 2_000, expiresAt);
    const pending = await info(executed.scheduleId);
    expect(pending.executed).toBeNull();
    expect(pending.deleted).toBeNull();
    expect(pending.scheduledTransactionId?.toString()).toBe(`${executed.createTxId}?scheduled`);
    await posterSign(executed.scheduleId, posterKey);
    await (await new ScheduleDeleteTransaction().setScheduleId(deleted.scheduleId).execute(client)).getReceipt(client);
    const e = await info(executed.scheduleId);
    expect(e.executed).not.toBeNull();
    expect(e.deleted).toBeNull();
    const d = await info(deleted.scheduleId);
    expect(d.deleted).not.toBeNull();
    expect(d.executed).toBeNull();
    // past the expiration both are purged: the ledger no longer has them (the mirror keeps their history)
    while (Date.now() < expiresAt.getTime() + 500) await new Promise((r) => setTimeout(r, 250));
    await newAccount(PrivateKey.generateED25519(), 1); // consensus moves past the expiration
    expect(await statusOf(() => info(executed.scheduleId))).toBe('INVALID_SCHEDULE_ID');
    expect(await statusOf(() => info(deleted.scheduleId))).toBe('INVALID_SCHEDULE_ID');
    expect(await statusOf(() => posterSign(executed.scheduleId, posterKey))).toBe('INVALID_SCHEDULE_ID');
    expect((await mirror.getSchedule(executed.scheduleId))?.executed_timestamp).toBeTruthy();
    // the scheduled transaction's own receipt still tells its outcome
    const receipt = await new TransactionReceiptQuery().setTransactionId(TransactionId.fromString(`${executed.createTxId}?scheduled`)).execute(client);
    expect(receipt.status.toString()).toBe('SUCCESS');
  });

  it('a pending schedule deleted by its admin key cannot execute afterwards', async () => {
    const posterKey = PrivateKey.generateED25519();
    const poster = await newAccount(posterKey, 10);
    const escrow = await newAccount(PrivateKey.generateED25519(), 1);
    const { scheduleId } = await escrowSchedule(poster, escrow, 100_000_000, new Date(Date.now() + 600_000));
    await (await new ScheduleDeleteTransaction().setScheduleId(scheduleId).execute(client)).getReceipt(client);
    expect(await statusOf(() => posterSign(scheduleId, posterKey))).toBe('SCHEDULE_ALREADY_DELETED');
    expect((await mirror.getSchedule(scheduleId))?.deleted).toBe(true);
  });
});
