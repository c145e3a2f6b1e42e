// The client-signed payment of a task completed without escrow: SDK-built transfers, signed whole or
// with a detached signature over the body bytes, accepted only when they are exactly the expected
// payment; every tampered variant is refused before anything could be submitted.
import { describe, expect, it } from 'vitest';
import { AccountId, Hbar, PrivateKey, ScheduleCreateTransaction, TokenId, TransactionId, TransferTransaction } from '@hashgraph/sdk';
import {
  addDetachedSignature,
  buildPayment,
  checkPayment,
  decodeTransactionBase64,
  expectedNetTransfers,
  singleBodyBytes,
  TransferCheckError,
  type ExpectedPayment,
} from '../../ledger/transferCheck.js';
import { signBytes } from '@agent-passport/core/keys';

const NODE = '0.0.3';
const poster = PrivateKey.generateED25519();
const posterEcdsa = PrivateKey.generateECDSA();
const other = PrivateKey.generateED25519();
const expected: ExpectedPayment = { payer: '0.0.1001', claimer: '0.0.1002', treasury: '0.0.98', priceTinybars: 1_000_000_000n, feeTinybars: 25_000_000n, memo: 'task:abc' };
const policy = () => ({ nodeAccountIds: [NODE], now: Date.now() });

/** round trip through bytes, as a client would send them */
const roundTrip = (tx: { toBytes(): Uint8Array }) => decodeTransactionBase64(Buffer.from(tx.toBytes()).toString('base64'));

async function signed(p: ExpectedPayment = expected, key = poster) {
  const tx = buildPayment({ ...p, nodeAccountId: NODE });
  await tx.sign(key);
  return roundTrip(tx);
}

function reasonOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    if (err instanceof TransferCheckError) return err.reason;
    throw err;
  }
  return 'accepted';
}

/** A hand-built transfer paid by the poster, frozen for our node, with the given HBAR legs. */
function custom(legs: [string, bigint][], opts: { payer?: string; nodes?: string[]; memo?: string } = {}) {
  const tx = new TransferTransaction();
  for (const [a, v] of legs) tx.addHbarTransfer(AccountId.fromString(a), Hbar.fromTinybars(v.toString()));
  tx.setTransactionId(TransactionId.generate(AccountId.fromString(opts.payer ?? expected.payer)))
    .setNodeAccountIds((opts.nodes ?? [NODE]).map((n) => AccountId.fromString(n)))
    .setTransactionMemo(opts.memo ?? expected.memo!);
  return tx;
}

describe('expected payment', () => {
  it('moves price from the poster, price - fee to the claimer and the fee to the treasury', () => {
    expect([...expectedNetTransfers(expected)]).toEqual([
      ['0.0.1001', -1_000_000_000n],
      ['0.0.1002', 975_000_000n],
      ['0.0.98', 25_000_000n],
    ]);
    expect([...expectedNetTransfers({ ...expected, feeTinybars: 0n })]).toEqual([
      ['0.0.1001', -1_000_000_000n],
      ['0.0.1002', 1_000_000_000n],
    ]);
  });
});

describe('checkPayment', () => {
  it('accepts the prepared transfer signed by the poster (ED25519 and ECDSA) and returns its id', async () => {
    const tx = await signed();
    const ok = checkPayment(tx, expected, poster.publicKey, policy());
    expect(ok.transactionId).toBe(tx.transactionId!.toString());
    expect(ok.transactionId.startsWith('0.0.1001@')).toBe(true);
    const txE = await signed(expected, posterEcdsa);
    expect(checkPayment(txE, expected, posterEcdsa.publicKey, policy()).transactionId).toBe(txE.transactionId!.toString());
  });

  it('accepts unsigned prepared bytes plus a detached signature over the body (as /market/sign makes it)', async () => {
    for (const key of [poster, posterEcdsa]) {
      const unsigned = roundTrip(buildPayment({ ...expected, nodeAccountId: NODE }));
      const sig = Buffer.from(signBytes(key, singleBodyBytes(unsigned))).toString('hex');
      const tx = roundTrip(unsigned); // the server decodes the client's bytes again
      addDetachedSignature(tx, key.publicKey, key.publicKey, sig);
      const ok = checkPayment(tx, expected, key.publicKey, policy());
      // the signed bytes the workflow receives carry the signature
      expect(checkPayment(roundTrip(ok.transaction), expected, key.publicKey, policy()).transactionId).toBe(ok.transactionId);
    }
  });

  it('refuses a detached signature by another key, a wrong signature and a non-hex signature', async () => {
    const unsigned = roundTrip(buildPayment({ ...expected, nodeAccountId: NODE }));
    const body = singleBodyBytes(unsigned);
    const t1 = roundTrip(unsigned);
    expect(reasonOf(() => addDetachedSignature(t1, other.publicKey, poster.publicKey, Buffer.from(signBytes(other, body)).toString('hex')))).toBe('public_key_mismatch');
    const t2 = roundTrip(unsigned);
    addDetachedSignature(t2, poster.publicKey, poster.publicKey, Buffer.from(signBytes(other, body)).toString('hex'));
    expect(reasonOf(() => checkPayment(t2, expected, poster.publicKey, policy()))).toBe('invalid_payer_signature');
    const t3 = roundTrip(unsigned);
    expect(reasonOf(() => addDetachedSignature(t3, poster.publicKey, poster.publicKey, 'zz'))).toBe('invalid_signature_encoding');
  });

  it('refuses unsigned bytes and bytes signed by another key', async () => {
    const unsigned = roundTrip(buildPayment({ ...expected, nodeAccountId: NODE }));
    expect(reasonOf(() => checkPayment(unsigned, expected, poster.publicKey, policy()))).toBe('missing_payer_signature');
    const byOther = await signed(expected, other);
    expect(reasonOf(() => checkPayment(byOther, expected, poster.publicKey, policy()))).toBe('missing_payer_signature');
  });

  it('refuses bytes changed after signing (the memo rewritten inside the signed body)', async () => {
    const tx = await signed();
    const bytes = Buffer.from(tx.toBytes());
    const at = bytes.indexOf(Buffer.from('task:abc'));
    expect(at).toBeGreaterThan(0);
    bytes.write('task:abd', at);
    const tampered = decodeTransactionBase64(bytes.toString('base64'));
    expect(tampered.transactionMemo).toBe('task:abd');
    expect(reasonOf(() => checkPayment(tampered, { ...expected, memo: 'task:abd' }, poster.publicKey, policy()))).toBe('invalid_payer_signature');
  });

  it('refuses other amounts, other recipients, extra legs and a missing fee', async () => {
    const cases: [string, bigint][][] = [
      [['0.0.1001', -1_000_000_000n], ['0.0.1002', 1_000_000_000n]], // fee kept by the claimer
      [['0.0.1001', -1_000_000_000n], ['0.0.1002', 975_000_000n], ['0.0.99', 25_000_000n]], // fee elsewhere
      [['0.0.1001', -999_999_999n], ['0.0.1002', 974_999_999n], ['0.0.98', 25_000_000n]], // less
      [['0.0.1001', -1_000_000_001n], ['0.0.1002', 975_000_000n], ['0.0.98', 25_000_000n], ['0.0.77', 1n]], // extra credit
      [['0.0.1001', -999_999_999n], ['0.0.5', -1n], ['0.0.1002', 975_000_000n], ['0.0.98', 25_000_000n]], // second debit
    ];
    for (const legs of cases) {
      const tx = custom(legs).freeze();
      await tx.sign(poster);
      expect(reasonOf(() => checkPayment(roundTrip(tx), expected, poster.publicKey, policy()))).toBe('transfers_mismatch');
    }
  });

  it('refuses token and NFT transfers riding along', async () => {
    const tx = custom([...expectedNetTransfers(expected)]);
    tx.addTokenTransfer(TokenId.fromString('0.0.500'), AccountId.fromString('0.0.1001'), -1).addTokenTransfer(TokenId.fromString('0.0.500'), AccountId.fromString('0.0.1002'), 1);
    await tx.freeze().sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(tx), expected, poster.publicKey, policy()))).toBe('token_transfers_not_allowed');
    const nft = custom([...expectedNetTransfers(expected)]);
    nft.addNftTransfer(TokenId.fromString('0.0.600'), 1, AccountId.fromString('0.0.1002'), AccountId.fromString('0.0.1001'));
    await nft.freeze().sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(nft), expected, poster.publicKey, policy()))).toBe('token_transfers_not_allowed');
  });

  it('refuses an allowance transfer', async () => {
    const tx = new TransferTransaction()
      .addApprovedHbarTransfer(AccountId.fromString('0.0.1001'), Hbar.fromTinybars(-1_000_000_000))
      .addHbarTransfer(AccountId.fromString('0.0.1002'), Hbar.fromTinybars(975_000_000))
      .addHbarTransfer(AccountId.fromString('0.0.98'), Hbar.fromTinybars(25_000_000))
      .setTransactionId(TransactionId.generate(AccountId.fromString('0.0.1001')))
      .setNodeAccountIds([AccountId.fromString(NODE)])
      .setTransactionMemo('task:abc')
      .freeze();
    await tx.sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(tx), expected, poster.publicKey, policy()))).toBe('approved_transfer_not_allowed');
  });

  it('refuses a schedule wrapping the very transfer', async () => {
    const inner = new TransferTransaction();
    for (const [a, v] of expectedNetTransfers(expected)) inner.addHbarTransfer(AccountId.fromString(a), Hbar.fromTinybars(v.toString()));
    const tx = new ScheduleCreateTransaction()
      .setScheduledTransaction(inner)
      .setTransactionId(TransactionId.generate(AccountId.fromString('0.0.1001')))
      .setNodeAccountIds([AccountId.fromString(NODE)])
      .freeze();
    await tx.sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(tx), expected, poster.publicKey, policy()))).toBe('invalid_transaction_type');
  });

  it('refuses another payer (403), another node, several nodes, another memo', async () => {
    const payerTx = custom([...expectedNetTransfers(expected)], { payer: '0.0.1002' }).freeze();
    await payerTx.sign(poster);
    let err: unknown;
    try {
      checkPayment(roundTrip(payerTx), expected, poster.publicKey, policy());
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(TransferCheckError);
    expect((err as TransferCheckError).reason).toBe('payer_mismatch');
    expect((err as TransferCheckError).status).toBe(403);

    const nodeTx = custom([...expectedNetTransfers(expected)], { nodes: ['0.0.4'] }).freeze();
    await nodeTx.sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(nodeTx), expected, poster.publicKey, policy()))).toBe('node_not_supported');

    const multi = custom([...expectedNetTransfers(expected)], { nodes: [NODE, '0.0.4'] }).freeze();
    await multi.sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(multi), expected, poster.publicKey, { nodeAccountIds: [NODE, '0.0.4'], now: Date.now() }))).toBe('multiple_transactions');

    const memoTx = custom([...expectedNetTransfers(expected)], { memo: 'task:other' }).freeze();
    await memoTx.sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(memoTx), expected, poster.publicKey, policy()))).toBe('memo_mismatch');
  });

  it('refuses an expired transfer, one from the future and a max fee above the bound', async () => {
    const tx = await signed();
    expect(reasonOf(() => checkPayment(tx, expected, poster.publicKey, { nodeAccountIds: [NODE], now: Date.now() + 115_000 }))).toBe('transaction_expired');
    expect(reasonOf(() => checkPayment(tx, expected, poster.publicKey, { nodeAccountIds: [NODE], now: Date.now() - 60_000 }))).toBe('transaction_not_yet_valid');
    const pricey = custom([...expectedNetTransfers(expected)]).setMaxTransactionFee(new Hbar(50)).freeze();
    await pricey.sign(poster);
    expect(reasonOf(() => checkPayment(roundTrip(pricey), expected, poster.publicKey, policy()))).toBe('max_fee_too_high');
  });

  it('refuses bytes that are not a transaction', () => {
    expect(reasonOf(() => decodeTransactionBase64('bm90IGEgdHJhbnNhY3Rpb24='))).toBe('invalid_bytes');
    expect(reasonOf(() => decodeTransactionBase64('***'))).toBe('invalid_bytes');
  });
});
