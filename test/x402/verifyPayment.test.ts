// Pure tests of the Hedera `exact` verification rules: transactions are built and signed with the SDK
// offline; the payer's key and the replay check are injected.
import { describe, expect, it } from 'vitest';
import {
  AccountId,
  Hbar,
  HbarUnit,
  Long,
  NftId,
  PrivateKey,
  ScheduleCreateTransaction,
  TokenId,
  TransactionId,
  TransferTransaction,
} from '@hashgraph/sdk';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ExactHederaClientScheme } from '@agent-passport/core/x402/clientScheme';
import { verifyDecodedTransaction, verifyHederaPayment, type VerifyPolicy } from '../../ledger/x402/verifyPayment.js';

const FEE_PAYER = '0.0.1001';
const PAYER = '0.0.2001';
const PAY_TO = '0.0.3001';
const NODE = '0.0.3';
const AMOUNT = 500_000_000n;

const payerKey = PrivateKey.generateED25519();
const otherKey = PrivateKey.generateECDSA();

const requirements: PaymentRequirements = {
  scheme: 'exact',
  network: 'hedera:local',
  asset: '0.0.0',
  amount: AMOUNT.toString(),
  payTo: PAY_TO,
  maxTimeoutSeconds: 180,
  extra: { feePayer: FEE_PAYER },
};
const policy: VerifyPolicy = { feePayer: FEE_PAYER, network: 'hedera:local', nodeAccountIds: [NODE] };
const deps = (seen = false) => ({
  getPayerPublicKey: async (id: string) => (id === PAYER ? payerKey.publicKey : null),
  isSeen: async () => seen,
});

const tb = (n: bigint) => Hbar.from(Long.fromString(n.toString()), HbarUnit.Tinybar);

function transfer(entries: [string, bigint][], opts: { txAccount?: string; sign?: PrivateKey[]; extra?: (t: TransferTransaction) => void } = {}) {
  const tx = new TransferTransaction();
  for (const [acct, amt] of entries) tx.addHbarTransfer(AccountId.fromString(acct), tb(amt));
  opts.extra?.(tx);
  tx.setTransactionId(TransactionId.generate(AccountId.fromString(opts.txAccount ?? FEE_PAYER)))
    .setNodeAccountIds([AccountId.fromString(NODE)])
    .setMaxTransactionFee(new Hbar(1))
    .freeze();
  return tx;
}

async function signed(tx: TransferTransaction, keys: PrivateKey[] = [payerKey]) {
  for (const k of keys) await tx.sign(k);
  return tx;
}

describe('verifyHederaPayment', () => {
  it('accepts a payment built by our client scheme', async () => {
    const scheme = new ExactHederaClientScheme({ accountId: PAYER, privateKey: payerKey.toStringDer(), nodeAccountId: NODE });
    const partial = await scheme.createPaymentPayload(2, requirements);
    const payload: PaymentPayload = { x402Version: 2, accepted: requirements, payload: partial.payload };
    const r = await verifyHederaPayment(payload, requirements, policy, deps());
    expect(r.isValid).toBe(true);
    if (r.isValid) {
      expect(r.payer).toBe(PAYER);
      expect(r.payment.amountTinybars).toBe(AMOUNT);
    }
  });

  it('accepts a correct hand-built transfer', async () => {
    const tx = await signed(transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]]));
    expect((await verifyDecodedTransaction(tx, requirements, policy, deps())).isValid).toBe(true);
  });

  const cases: [string, () => Promise<import('@hashgraph/sdk').Transaction>, string][] = [
    ['wrong amount', () => signed(transfer([[PAYER, -(AMOUNT - 1n)], [PAY_TO, AMOUNT - 1n]])), 'amount_mismatch'],
    ['wrong payTo', () => signed(transfer([[PAYER, -AMOUNT], ['0.0.3002', AMOUNT]])), 'pay_to_mismatch'],
    ['a fee-payer debit', () => signed(transfer([[FEE_PAYER, -AMOUNT], [PAY_TO, AMOUNT]])), 'fee_payer_debited'],
    [
      'a fee-payer debit hidden among other transfers',
      () => signed(transfer([[PAYER, -AMOUNT], [FEE_PAYER, -1n], [PAY_TO, AMOUNT], ['0.0.4001', 1n]])),
      'fee_payer_debited',
    ],
    [
      'an extra NFT transfer',
      () =>
        signed(
          transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]], {
            extra: (t) => t.addNftTransfer(new NftId(TokenId.fromString('0.0.5005'), 1), AccountId.fromString(FEE_PAYER), AccountId.fromString(PAYER)),
          }),
        ),
      'token_transfers_not_allowed',
    ],
    [
      'a fungible token transfer',
      () =>
        signed(
          transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]], {
            extra: (t) => t.addTokenTransfer(TokenId.fromString('0.0.5006'), AccountId.fromString(FEE_PAYER), -10).addTokenTransfer(TokenId.fromString('0.0.5006'), AccountId.fromString(PAYER), 10),
          }),
        ),
      'token_transfers_not_allowed',
    ],
    [
      'a scheduled transfer (ScheduleCreate wrapping a transfer)',
      async () => {
        const inner = new TransferTransaction().addHbarTransfer(AccountId.fromString(PAYER), tb(-AMOUNT)).addHbarTransfer(AccountId.fromString(PAY_TO), tb(AMOUNT));
        const tx = new ScheduleCreateTransaction()
          .setScheduledTransaction(inner)
          .setTransactionId(TransactionId.generate(AccountId.fromString(FEE_PAYER)))
          .setNodeAccountIds([AccountId.fromString(NODE)])
          .freeze();
        await tx.sign(payerKey);
        return tx;
      },
      'invalid_transaction_type',
    ],
    ['a missing payer signature', () => signed(transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]]), []), 'missing_payer_signature'],
    ['a signature by another key', () => signed(transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]]), [otherKey]), 'missing_payer_signature'],
    ['a transaction id not of the fee payer', () => signed(transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]], { txAccount: PAYER })), 'fee_payer_mismatch'],
    ['unbalanced transfers', () => signed(transfer([[PAYER, -AMOUNT + 5n], [PAY_TO, AMOUNT]])), 'transfers_do_not_balance'],
    ['a second recipient', () => signed(transfer([[PAYER, -AMOUNT - 7n], [PAY_TO, AMOUNT], ['0.0.4001', 7n]])), 'unexpected_recipient'],
  ];

  for (const [name, build, reason] of cases) {
    it(`refuses ${name}`, async () => {
      const r = await verifyDecodedTransaction(await build(), requirements, policy, deps());
      expect(r.isValid).toBe(false);
      if (!r.isValid) expect(r.invalidReason).toBe(reason);
    });
  }

  it('refuses a payment seen before', async () => {
    const tx = await signed(transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]]));
    const r = await verifyDecodedTransaction(tx, requirements, policy, deps(true));
    expect(r.isValid).toBe(false);
    if (!r.isValid) expect(r.invalidReason).toBe('transaction_already_used');
  });

  it('refuses an expired payment and a too-high max fee', async () => {
    const tx = await signed(transfer([[PAYER, -AMOUNT], [PAY_TO, AMOUNT]]));
    const later = await verifyDecodedTransaction(tx, requirements, policy, { ...deps(), now: () => Date.now() + 10 * 60_000 });
    expect(later.isValid).toBe(false);
    if (!later.isValid) expect(later.invalidReason).toBe('transaction_expired');
    const strict = await verifyDecodedTransaction(tx, requirements, { ...policy, maxTransactionFeeTinybars: 1000n }, deps());
    expect(strict.isValid).toBe(false);
    if (!strict.isValid) expect(strict.invalidReason).toBe('max_fee_too_high');
  });

  it('refuses non-HBAR assets and requirement mismatches', async () => {
    const scheme = new ExactHederaClientScheme({ accountId: PAYER, privateKey: payerKey.toStringDer(), nodeAccountId: NODE });
    const partial = await scheme.createPaymentPayload(2, requirements);
    const payload: PaymentPayload = { x402Version: 2, accepted: requirements, payload: partial.payload };
    const r1 = await verifyHederaPayment(payload, { ...requirements, asset: '0.0.5006' }, policy, deps());
    expect(r1.isValid === false && r1.invalidReason).toBe('unsupported_asset');
    const r2 = await verifyHederaPayment(payload, { ...requirements, amount: '1' }, policy, deps());
    expect(r2.isValid === false && r2.invalidReason).toBe('requirements_mismatch');
    const r3 = await verifyHederaPayment({ ...payload, payload: { transaction: 'not base64!' } }, requirements, policy, deps());
    expect(r3.isValid === false && r3.invalidReason).toBe('invalid_payload');
  });
});
