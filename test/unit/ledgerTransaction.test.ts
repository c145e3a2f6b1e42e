// Client-supplied transaction bytes judged without the SDK (domain/ledgerTransaction.ts, issue 19
// item 1), as the taskLifecycle validators judge them: the reader agrees with the SDK on SDK-built
// transactions, and the rules refuse everything that is not exactly the expected payment or the
// expected ScheduleSign (the operator -> attacker transfer of the reproduction, a ScheduleSign of a
// schedule that is not the task's, another payer, another type, extra fields, several nodes).
// ledger/scheduleSignCheck.ts adds the poster's signature on top.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { AccountId, Hbar, PrivateKey, ScheduleId, ScheduleSignTransaction, TransactionId, TransferTransaction, type Transaction } from '@hashgraph/sdk';
import {
  base64ToBytes,
  decodeClientTransaction,
  decodeClientTransactionBase64,
  directPaymentProblem,
  scheduleSignProblem,
  type ExpectedPayment,
} from '../../domain/ledgerTransaction.js';
import { buildPayment } from '../../ledger/transferCheck.js';
import { checkScheduleSign } from '../../ledger/scheduleSignCheck.js';
import { CheckedTransaction } from '../../ledger/checkedTransaction.js';
import { TransferCheckError } from '../../ledger/transferCheck.js';

const NODE = '0.0.3';
const OPERATOR = '0.0.2';
const poster = PrivateKey.generateED25519();
const expected: ExpectedPayment = { payer: '0.0.1001', claimer: '0.0.1002', treasury: '0.0.98', priceTinybars: 1_000_000_000n, feeTinybars: 25_000_000n, memo: 'task abc payment' };
const policy = { nodeAccountIds: [NODE] };
const b64 = (tx: Transaction) => Buffer.from(tx.toBytes()).toString('base64');
const decode = (tx: Transaction) => decodeClientTransactionBase64(b64(tx))!;

function scheduleSign(scheduleId: string, opts: { payer?: string; nodes?: string[]; memo?: string } = {}) {
  const tx = new ScheduleSignTransaction()
    .setScheduleId(ScheduleId.fromString(scheduleId))
    .setTransactionId(TransactionId.generate(AccountId.fromString(opts.payer ?? OPERATOR)))
    .setNodeAccountIds((opts.nodes ?? [NODE]).map((n) => AccountId.fromString(n)));
  if (opts.memo) tx.setTransactionMemo(opts.memo);
  return tx.freeze();
}

describe('the reader (no SDK)', () => {
  it('reads an SDK-built payment as the SDK does: id, payer, node, fee, duration, memo and every leg', async () => {
    const tx = buildPayment({ ...expected, treasury: '0.0.98', nodeAccountId: NODE });
    await tx.sign(poster);
    const d = decode(tx);
    expect(d.entries).toHaveLength(1);
    const b = d.entries[0].body;
    const id = tx.transactionId!;
    expect(b.payer).toBe('0.0.1001');
    expect(`${b.payer}@${b.validStartSeconds}.${String(b.validStartNanos).padStart(9, '0')}`).toBe(id.toString());
    expect(b.node).toBe(NODE);
    expect(b.maxFeeTinybars).toBe(100_000_000n);
    expect(b.validDurationSeconds).toBe(120n);
    expect(b.memo).toBe('task abc payment');
    expect(b.dataField).toBe(14);
    expect(b.unexpected).toEqual([]);
    expect(b.hbarLegs.map((l) => [l.account, l.tinybars])).toEqual(tx.hbarTransfersList.map((t) => [t.accountId.toString(), BigInt(t.amount.toTinybars().toString())]));
    expect(d.entries[0].sigPairs).toHaveLength(1);
    expect(Buffer.from(d.entries[0].sigPairs[0].prefix).toString('hex')).toBe(Buffer.from(poster.publicKey.toBytesRaw()).toString('hex'));
  });

  it('reads a ScheduleSign: its schedule and payer', () => {
    const b = decode(scheduleSign('0.0.4242')).entries[0].body;
    expect(b).toMatchObject({ payer: OPERATOR, scheduleId: '0.0.4242', dataField: 44, memo: '', unexpected: [] });
  });

  it('base64 decoding matches Node for any bytes; garbage is no transaction', () => {
    for (let n = 0; n < 40; n++) {
      const bytes = randomBytes(n);
      expect(Buffer.from(base64ToBytes(bytes.toString('base64'))!).equals(bytes)).toBe(true);
    }
    expect(base64ToBytes('***')).toBeNull();
    expect(decodeClientTransactionBase64('bm90IGEgdHJhbnNhY3Rpb24=')).toBeNull();
    expect(decodeClientTransactionBase64('')).toBeNull();
    expect(decodeClientTransactionBase64('A'.repeat(20_000))).toBeNull();
    expect(decodeClientTransaction(randomBytes(64))).toBeNull();
  });
});

describe('directPaymentProblem', () => {
  it('accepts exactly the prepared payment, also without knowing the treasury (older workflows)', async () => {
    const tx = buildPayment({ ...expected, treasury: '0.0.98', nodeAccountId: NODE });
    await tx.sign(poster);
    expect(directPaymentProblem(decode(tx), expected, policy)).toBeNull();
    expect(directPaymentProblem(decode(tx), { ...expected, treasury: undefined }, {})).toBeNull();
  });

  it('refuses the reproduction: operator -> attacker, paid and signed by the attacker', async () => {
    const attacker = PrivateKey.generateED25519();
    const tx = new TransferTransaction()
      .addHbarTransfer(AccountId.fromString(OPERATOR), Hbar.fromTinybars(-25_000_000_000))
      .addHbarTransfer(AccountId.fromString('0.0.6666'), Hbar.fromTinybars(25_000_000_000))
      .setTransactionId(TransactionId.generate(AccountId.fromString('0.0.6666')))
      .setNodeAccountIds([AccountId.fromString(NODE)])
      .freeze();
    await tx.sign(attacker);
    expect(directPaymentProblem(decode(tx), expected, policy)?.reason).toBe('payer_mismatch');
    expect(directPaymentProblem(decode(tx), { ...expected, payer: '0.0.6666' }, policy)?.reason).toBe('transfers_mismatch');
  });

  it('refuses a ScheduleSign, several nodes, another node and a fee or duration out of bounds', async () => {
    expect(directPaymentProblem(decode(scheduleSign('0.0.5')), expected, policy)?.reason).toBe('invalid_transaction_type');
    const multi = new TransferTransaction()
      .addHbarTransfer(AccountId.fromString('0.0.1001'), Hbar.fromTinybars(-1))
      .addHbarTransfer(AccountId.fromString('0.0.1002'), Hbar.fromTinybars(1))
      .setTransactionId(TransactionId.generate(AccountId.fromString('0.0.1001')))
      .setNodeAccountIds([AccountId.fromString(NODE), AccountId.fromString('0.0.4')])
      .freeze();
    expect(directPaymentProblem(decode(multi), expected, policy)?.reason).toBe('multiple_transactions');
    const other = buildPayment({ ...expected, treasury: '0.0.98', nodeAccountId: '0.0.4' });
    expect(directPaymentProblem(decode(other), expected, policy)?.reason).toBe('node_not_supported');
    const pricey = buildPayment({ ...expected, treasury: '0.0.98', nodeAccountId: NODE, maxTransactionFeeTinybars: 5_000_000_000n });
    expect(directPaymentProblem(decode(pricey), expected, policy)?.reason).toBe('max_fee_too_high');
  });

  it('checks the validity window only when given the time', async () => {
    const tx = buildPayment({ ...expected, treasury: '0.0.98', nodeAccountId: NODE });
    expect(directPaymentProblem(decode(tx), expected, { ...policy, now: Date.now() + 600_000 })?.reason).toBe('transaction_expired');
    expect(directPaymentProblem(decode(tx), expected, policy)).toBeNull();
  });
});

describe('scheduleSignProblem and checkScheduleSign', () => {
  const pending = ['0.0.5001', '0.0.5002'];

  it('accepts a ScheduleSign of a pending schedule paid by the operator', () => {
    expect(scheduleSignProblem(decode(scheduleSign('0.0.5001')), { payer: OPERATOR, pendingScheduleIds: pending, scheduleId: '0.0.5001' }, policy)).toBeNull();
    // older workflows know no operator: the payer is not checked there (the activity checks it)
    expect(scheduleSignProblem(decode(scheduleSign('0.0.5002', { payer: '0.0.1001' })), { pendingScheduleIds: pending }, {})).toBeNull();
  });

  it('refuses a schedule that is not the task pending one, another payer, a memo, another type, several nodes', async () => {
    const want = { payer: OPERATOR, pendingScheduleIds: pending, scheduleId: '0.0.5001' };
    expect(scheduleSignProblem(decode(scheduleSign('0.0.7777')), want, policy)?.reason).toBe('schedule_not_pending');
    expect(scheduleSignProblem(decode(scheduleSign('0.0.5002')), want, policy)?.reason).toBe('schedule_not_pending');
    expect(scheduleSignProblem(decode(scheduleSign('0.0.5001', { payer: '0.0.6666' })), want, policy)?.reason).toBe('payer_mismatch');
    expect(scheduleSignProblem(decode(scheduleSign('0.0.5001', { memo: 'x' })), want, policy)?.reason).toBe('memo_mismatch');
    expect(scheduleSignProblem(decode(scheduleSign('0.0.5001', { nodes: [NODE, '0.0.4'] })), want, { nodeAccountIds: [NODE, '0.0.4'] })?.reason).toBe('multiple_transactions');
    const transfer = new TransferTransaction()
      .addHbarTransfer(AccountId.fromString(OPERATOR), Hbar.fromTinybars(-1))
      .addHbarTransfer(AccountId.fromString('0.0.6666'), Hbar.fromTinybars(1))
      .setTransactionId(TransactionId.generate(AccountId.fromString(OPERATOR)))
      .setNodeAccountIds([AccountId.fromString(NODE)])
      .freeze();
    expect(scheduleSignProblem(decode(transfer), want, policy)?.reason).toBe('invalid_transaction_type');
  });

  it('refuses fields outside the expected ones (e.g. a batch key) as exactly not the expected transaction', () => {
    // TransactionBody field 73 (batch_key), a Key { ed25519 } appended to the body of a ScheduleSign
    const tx = scheduleSign('0.0.5001');
    const d = decode(tx);
    const body = d.entries[0].bodyBytes;
    const key = Buffer.concat([Buffer.from([0x0a, 32]), randomBytes(32)]);
    const extra = Buffer.concat([Buffer.from(body), Buffer.from([0xca, 0x04, key.length]), key]);
    const signed = Buffer.concat([Buffer.from([0x0a, extra.length]), extra]);
    const transaction = Buffer.concat([Buffer.from([0x2a, signed.length]), signed]);
    const decoded = decodeClientTransaction(Buffer.concat([Buffer.from([0x0a, transaction.length]), transaction]))!;
    expect(decoded.entries[0].body.unexpected).toContain('TransactionBody.73');
    expect(scheduleSignProblem(decoded, { payer: OPERATOR, pendingScheduleIds: pending }, policy)?.reason).toBe('unexpected_field');
  });

  it("checkScheduleSign wants the poster's signature and marks the bytes as operator-paid", async () => {
    const unsigned = scheduleSign('0.0.5001');
    const reasonOf = (fn: () => unknown) => {
      try {
        fn();
        return 'accepted';
      } catch (e) {
        return (e as TransferCheckError).reason;
      }
    };
    const want = { payer: OPERATOR, pendingScheduleIds: pending, scheduleId: '0.0.5001' };
    const pol = { ...policy, now: Date.now() };
    expect(reasonOf(() => checkScheduleSign(unsigned, want, poster.publicKey, pol))).toBe('missing_signer_signature');
    await unsigned.sign(PrivateKey.generateED25519());
    expect(reasonOf(() => checkScheduleSign(unsigned, want, poster.publicKey, pol))).toBe('missing_signer_signature');
    const signed = scheduleSign('0.0.5001');
    await signed.sign(poster);
    const checked = checkScheduleSign(signed, want, poster.publicKey, pol);
    expect(CheckedTransaction.isChecked(checked)).toBe(true);
    expect(checked.operatorPays).toBe(true);
    expect(CheckedTransaction.isChecked({ ...checked })).toBe(false);
  });
});
