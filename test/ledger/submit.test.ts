// Idempotent ledger writes against localnet and a real PostgreSQL: BUSY answers are retried by the
// adapter and the transfer happens exactly once; a retry after a lost response (or a crash before
// sending) never submits twice. Balances prove it.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { Client } from '@hashgraph/sdk';
import { startLocalnet, type Localnet } from '../../localnet/index.js';
import { createSql, type Sql } from '../../db/client.js';
import { createLedgerClient } from '../../ledger/client.js';
import { MirrorClient } from '../../ledger/mirror.js';
import { buildHbarTransfer } from '../../ledger/operations.js';
import { IdempotentSubmitter } from '../../ledger/submit.js';
import { findSubmission } from '../../db/queries/ledgerSubmissions.js';
import { LedgerError } from '../../ledger/errors.js';

let ln: Localnet;
let dir: string;
let client: Client;
let mirror: MirrorClient;
let sql: Sql;
let submitter: IdempotentSubmitter;
const run = randomUUID();

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ledger-submit-'));
  ln = await startLocalnet({ dataDir: dir, grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, facilitator: false });
  client = createLedgerClient({ network: 'local', node: ln.config.node, operator: ln.config.operator, retry: { minBackoffMs: 20, maxBackoffMs: 200 } });
  mirror = new MirrorClient(ln.mirrorUrl);
  sql = createSql(inject('databaseUrl'), { max: 2 });
  submitter = new IdempotentSubmitter({ sql, client, mirror, mirrorLagMs: 1_000 });
});

afterAll(async () => {
  client?.close();
  await sql?.end();
  await ln?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const balance = async (id: string) => (await mirror.getHbarBalance(id))!;

describe('idempotent submit', () => {
  it('with the node answering BUSY several times, the transfer happens exactly once', async () => {
    const to = ln.config.accounts[2].accountId;
    const before = await balance(to);
    ln.faults.busy(3);
    const key = `${run}/busy`;
    const r = await submitter.submit({ idempotencyKey: key, kind: 'hbar_transfer', build: () => buildHbarTransfer({ from: ln.config.operator.accountId, to, amountTinybars: 1_000n }) });
    expect(r.receipt.status).toBe('SUCCESS');
    expect(ln.faults.state().busyRemaining).toBe(0);
    expect((await balance(to)) - before).toBe(1_000n);
    // the same key again: the recorded outcome, no new transfer
    const again = await submitter.submit({ idempotencyKey: key, build: () => buildHbarTransfer({ from: ln.config.operator.accountId, to, amountTinybars: 1_000n }) });
    expect(again).toMatchObject({ reused: true, source: 'record', transactionId: r.transactionId });
    expect((await balance(to)) - before).toBe(1_000n);
  });

  it('a retry after a lost response does not submit twice', async () => {
    const to = ln.config.accounts[3].accountId;
    const before = await balance(to);
    const key = `${run}/lost-response`;
    let builds = 0;
    const build = () => {
      builds++;
      return buildHbarTransfer({ from: ln.config.operator.accountId, to, amountTinybars: 2_000n });
    };
    // first attempt: the node accepts the transaction, then the response is "lost"
    await expect(
      submitter.submit({ idempotencyKey: key, build, hooks: { afterSubmit: () => { throw new LedgerError('TIMEOUT', 'response lost', { retryable: true }); } } }),
    ).rejects.toMatchObject({ status: 'TIMEOUT', retryable: true });
    const row = await findSubmission(sql, key);
    expect(row?.status).toBe('pending');
    // the activity retries with the same key
    const r = await submitter.submit({ idempotencyKey: key, build });
    expect(r.receipt.status).toBe('SUCCESS');
    expect(r.reused).toBe(true);
    expect(r.transactionId).toBe(row!.transaction_id);
    expect(builds).toBe(1);
    expect((await balance(to)) - before).toBe(2_000n);
  });

  it('a retry after a crash before sending sends the recorded bytes once', async () => {
    const to = ln.config.accounts[4].accountId;
    const before = await balance(to);
    const key = `${run}/crash-before-send`;
    let builds = 0;
    const build = () => {
      builds++;
      return buildHbarTransfer({ from: ln.config.operator.accountId, to, amountTinybars: 3_000n });
    };
    await expect(submitter.submit({ idempotencyKey: key, build, hooks: { beforeSubmit: () => { throw new Error('worker crashed'); } } })).rejects.toThrow();
    const r = await submitter.submit({ idempotencyKey: key, build });
    expect(r.receipt.status).toBe('SUCCESS');
    expect(builds).toBe(1);
    // and once more while the receipt is still at the node: answered from the record
    const third = await submitter.submit({ idempotencyKey: key, build });
    expect(third.source).toBe('record');
    expect((await balance(to)) - before).toBe(3_000n);
  });

  it('a final failure is recorded and repeated, not retried', async () => {
    const poor = ln.config.accounts[5];
    const key = `${run}/insufficient`;
    const build = () => buildHbarTransfer({ from: poor.accountId, to: ln.config.escrow, amountTinybars: 10n ** 17n });
    const { parsePrivateKey } = await import('@agent-passport/core/keys');
    const signers = [parsePrivateKey(poor.privateKey)];
    const first = await submitter.submit({ idempotencyKey: key, build, signers }).catch((e) => e);
    expect(first).toBeInstanceOf(LedgerError);
    expect(first.retryable).toBe(false);
    const second = await submitter.submit({ idempotencyKey: key, build, signers }).catch((e) => e);
    expect(second).toMatchObject({ status: first.status, retryable: false });
  });

  it('never adds the operator signature to bytes built elsewhere: a frozen operator -> attacker transfer is refused, nothing moves (issue 19)', async () => {
    const attacker = ln.config.accounts[4];
    const { parsePrivateKey } = await import('@agent-passport/core/keys');
    const { AccountId, Hbar, TransactionId, TransferTransaction } = await import('@hashgraph/sdk');
    // what a client could put into a workflow input: paid and signed by the attacker, debiting the operator
    const forged = () => {
      const tx = new TransferTransaction()
        .addHbarTransfer(AccountId.fromString(ln.config.operator.accountId), Hbar.fromTinybars(-25_000_000_000))
        .addHbarTransfer(AccountId.fromString(attacker.accountId), Hbar.fromTinybars(25_000_000_000))
        .setTransactionId(TransactionId.generate(AccountId.fromString(attacker.accountId)))
        .setNodeAccountIds([AccountId.fromString(ln.config.node.accountId)])
        .freeze();
      return tx.sign(parsePrivateKey(attacker.privateKey));
    };
    const before = await balance(attacker.accountId);
    const err = await submitter.submit({ idempotencyKey: `${run}/forged`, kind: 'hbar_transfer', build: forged }).catch((e) => e);
    expect(err).toBeInstanceOf(LedgerError);
    expect(err).toMatchObject({ status: 'INVALID_TRANSACTION', retryable: false });
    expect(await findSubmission(sql, `${run}/forged`)).toBeNull();
    // a look-alike of a checker's verdict is no verdict
    const fake = await submitter
      .submit({ idempotencyKey: `${run}/forged-checked`, checked: async () => ({ transaction: await forged(), operatorPays: true, checker: 'fake' }) as never })
      .catch((e) => e);
    expect(fake).toMatchObject({ status: 'INVALID_TRANSACTION' });
    expect(await balance(attacker.accountId)).toBe(before);
  });
});
