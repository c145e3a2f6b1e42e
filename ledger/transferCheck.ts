// Client-signed HBAR payments of the marketplace (SPEC 4.4a complete without escrow; DESIGN.md 8:
// "every signed transaction from a client is decoded and checked for exactly the expected effect
// before it is submitted"). The poster pays the claimer directly: one plain CryptoTransfer, paid and
// signed by the poster's account, debiting the poster the task price and crediting the claimer the
// price less the marketplace fee and the treasury the fee, nothing else.
//
// The rules on the bytes live in domain/ledgerTransaction.ts (the taskLifecycle validators apply them
// too); checkPayment adds the poster's signature and hands the submitter a CheckedTransaction (issue
// 19). The API and the activity that submits the transfer both call it.
//
// Also here: building the frozen, unsigned transfer that prepare-payment hands out, and the body
// bytes a detached signature covers (what /market/sign signs). Pure apart from the injected clock;
// the poster's public key comes from the caller (the mirror in production).
import { AccountId, Hbar, PublicKey, Transaction, TransactionId, TransferTransaction } from '@hashgraph/sdk';
import { decodePaymentTransaction } from './x402/verifyPayment.js';
import { CheckedTransaction } from './checkedTransaction.js';
import {
  decodeClientTransaction,
  directPaymentProblem,
  expectedNetTransfers as domainNetTransfers,
  type ClientTxPolicy,
  type ClientTxProblem,
  type ClientTxReason,
  type ExpectedPayment as DomainExpectedPayment,
} from '../domain/ledgerTransaction.js';

export type TransferCheckReason =
  | ClientTxReason
  | 'public_key_mismatch'
  | 'invalid_signature_encoding'
  | 'missing_payer_signature'
  | 'invalid_payer_signature'
  | 'missing_signer_signature'
  | 'invalid_signer_signature';

export class TransferCheckError extends Error {
  /** 400: not the expected transfer; 403: paid or signed by someone other than the poster */
  readonly status: 400 | 403;
  constructor(
    readonly reason: TransferCheckReason,
    message: string,
    readonly hint?: string,
  ) {
    super(message);
    this.name = 'TransferCheckError';
    this.status = reason === 'payer_mismatch' || reason === 'public_key_mismatch' ? 403 : 400;
  }

  static of(p: ClientTxProblem): TransferCheckError {
    return new TransferCheckError(p.reason, p.message, p.hint);
  }
}

/** The one payment a task completion without escrow may make. Amounts in tinybars (rules: domain/ledgerTransaction.ts). */
export type ExpectedPayment = DomainExpectedPayment & { treasury: string };

/** Node ids, time and bounds the checks apply (domain/ledgerTransaction.ts ClientTxPolicy) with the time required. */
export type TransferCheckPolicy = ClientTxPolicy & { nodeAccountIds: string[]; now: number };

export interface CheckedPayment {
  /** the signed transaction, ready for the idempotent submitter */
  transaction: TransferTransaction;
  /** the same, as the submitter takes client bytes (the operator does not sign a poster-paid transfer) */
  checked: CheckedTransaction;
  /** SDK form 0.0.x@seconds.nanos */
  transactionId: string;
  validUntil: Date;
}

/** The expected net HBAR movement of a payment: payer -price, claimer +(price - fee), treasury +fee. */
export const expectedNetTransfers: (p: ExpectedPayment) => Map<string, bigint> = domainNetTransfers;

/**
 * Builds the unsigned, frozen payment for prepare-payment: transaction id of the payer (so the
 * poster pays the fees and signs), one node, the memo, a bounded max fee. Nothing is signed.
 */
export function buildPayment(p: ExpectedPayment & { nodeAccountId: string; maxTransactionFeeTinybars?: bigint }): TransferTransaction {
  const tx = new TransferTransaction();
  for (const [account, tinybars] of expectedNetTransfers(p)) tx.addHbarTransfer(AccountId.fromString(account), Hbar.fromTinybars(tinybars.toString()));
  tx.setTransactionId(TransactionId.generate(AccountId.fromString(p.payer)))
    .setNodeAccountIds([AccountId.fromString(p.nodeAccountId)])
    .setMaxTransactionFee(Hbar.fromTinybars((p.maxTransactionFeeTinybars ?? 100_000_000n).toString()));
  if (p.memo) tx.setTransactionMemo(p.memo);
  return tx.freeze();
}

interface Internals {
  _signedTransactions: { list: { bodyBytes?: Uint8Array | null; sigMap?: { sigPair?: { pubKeyPrefix?: Uint8Array | null }[] } | null }[] };
  _transactionIds: { list: unknown[] };
}

/**
 * The body bytes a detached signature covers: the transaction must be frozen for exactly one node
 * and one transaction id (as prepare-payment builds it). Throws TransferCheckError otherwise.
 */
export function singleBodyBytes(tx: Transaction): Uint8Array {
  const internals = tx as unknown as Internals;
  if (internals._transactionIds.list.length !== 1 || internals._signedTransactions.list.length !== 1) {
    throw new TransferCheckError('multiple_transactions', 'the transaction must be frozen for exactly one node and one transaction id', 'Freeze with setNodeAccountIds([one node]), as prepare-payment does');
  }
  const body = internals._signedTransactions.list[0].bodyBytes;
  if (!body || body.length === 0) throw new TransferCheckError('invalid_bytes', 'the transaction has no body bytes');
  return body;
}

/** Decodes base64 transaction bytes (at most 16 KB of base64). */
export function decodeTransactionBase64(base64: string): Transaction {
  const tx = decodePaymentTransaction(base64);
  if (!tx) throw new TransferCheckError('invalid_bytes', 'txBytes is not a base64 Hedera transaction', 'Send base64 of Transaction.toBytes() after freeze');
  return tx;
}

/**
 * Adds a detached signature (hex) by `publicKey` over the single body of `tx`. The key must be the
 * payer's account key (`accountKey`); a signature that does not verify is refused later by
 * checkPayment.
 */
export function addDetachedSignature(tx: Transaction, publicKey: PublicKey, accountKey: PublicKey, signatureHex: string): void {
  if (publicKey.toStringRaw() !== accountKey.toStringRaw()) {
    throw new TransferCheckError('public_key_mismatch', "publicKey is not the key of the poster's account", "Sign with the poster account's key");
  }
  const hex = signatureHex.replace(/^0x/i, '');
  if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length % 2 !== 0 || hex.length > 256) {
    throw new TransferCheckError('invalid_signature_encoding', 'signature is not hex', 'Send the signature as hex (POST /market/sign answers it in that form)');
  }
  singleBodyBytes(tx);
  try {
    tx.addSignature(publicKey, Uint8Array.from(Buffer.from(hex, 'hex')));
  } catch {
    throw new TransferCheckError('invalid_signature_encoding', 'the signature could not be attached to the transaction');
  }
}

/**
 * Checks that `tx` is exactly the expected payment (domain/ledgerTransaction.ts directPaymentProblem:
 * type, transfers, payer, memo, node, fee and validity window), signed by the payer's key, and
 * returns it for submission. Throws TransferCheckError (status 400 or 403) on the first problem.
 */
export function checkPayment(tx: Transaction, expected: ExpectedPayment, payerKey: PublicKey, policy: TransferCheckPolicy): CheckedPayment {
  const decoded = decodeClientTransaction(tx.toBytes());
  if (!decoded) throw new TransferCheckError('invalid_bytes', 'txBytes is not a Hedera transaction', 'Send base64 of Transaction.toBytes() after freeze');
  const p = directPaymentProblem(decoded, expected, policy);
  if (p) throw TransferCheckError.of(p);
  // the decoded bytes are a CryptoTransfer: the SDK decoded them as a TransferTransaction
  if (!(tx instanceof TransferTransaction)) throw new TransferCheckError('invalid_transaction_type', `only a plain CryptoTransfer is accepted, got ${tx.constructor.name}`);
  const transfer = tx;
  const id = transfer.transactionId!;
  requireSignature(transfer, payerKey, {
    missing: new TransferCheckError('missing_payer_signature', `the transaction is not signed by the key of ${expected.payer}`, 'Sign the body bytes with the poster key (POST /market/sign) and send signature and publicKey, or send signed txBytes'),
    invalid: new TransferCheckError('invalid_payer_signature', `the signature of ${expected.payer} does not verify`, 'Sign the exact bytes prepare-payment returned'),
  });
  const validUntil = new Date(id.validStart!.toDate().getTime() + (transfer.transactionValidDuration ?? 120) * 1000);
  return { transaction: transfer, checked: CheckedTransaction.passed(transfer, { operatorPays: false, checker: 'direct payment' }), transactionId: id.toString(), validUntil };
}

/**
 * Requires a valid signature by `key` over the transaction's one body: a signature pair whose prefix
 * matches the key, and the SDK's verification of it. Throws the given errors.
 */
export function requireSignature(tx: Transaction, key: PublicKey, errors: { missing: TransferCheckError; invalid: TransferCheckError }): void {
  const prefix = Buffer.from(key.toBytesRaw());
  const pairs = (tx as unknown as Internals)._signedTransactions.list[0]?.sigMap?.sigPair ?? [];
  const present = pairs.some((p) => p.pubKeyPrefix && p.pubKeyPrefix.length > 0 && prefix.subarray(0, p.pubKeyPrefix.length).equals(Buffer.from(p.pubKeyPrefix)));
  if (!present) throw errors.missing;
  let valid = false;
  try {
    valid = key.verifyTransaction(tx);
  } catch {
    valid = false;
  }
  if (!valid) throw errors.invalid;
}
