// Client-signed HBAR payments of the marketplace (SPEC 4.4a complete without escrow; DESIGN.md 8:
// "every signed transaction from a client is decoded and checked for exactly the expected effect
// before it is submitted"). The poster pays the claimer directly: one plain CryptoTransfer, paid and
// signed by the poster's account, debiting the poster the task price and crediting the claimer the
// price less the marketplace fee and the treasury the fee, nothing else.
//
// Also here: building the frozen, unsigned transfer that prepare-payment hands out, and the body
// bytes a detached signature covers (what /market/sign signs). Pure apart from the injected clock;
// the poster's public key comes from the caller (the mirror in production).
import { AccountId, Hbar, PublicKey, Transaction, TransactionId, TransferTransaction } from '@hashgraph/sdk';
import { decodePaymentTransaction } from './x402/verifyPayment.js';

export type TransferCheckReason =
  | 'invalid_bytes'
  | 'invalid_transaction_type'
  | 'multiple_transactions'
  | 'node_not_supported'
  | 'payer_mismatch'
  | 'token_transfers_not_allowed'
  | 'approved_transfer_not_allowed'
  | 'transfers_mismatch'
  | 'memo_mismatch'
  | 'max_fee_too_high'
  | 'valid_duration_too_long'
  | 'transaction_expired'
  | 'transaction_not_yet_valid'
  | 'public_key_mismatch'
  | 'invalid_signature_encoding'
  | 'missing_payer_signature'
  | 'invalid_payer_signature';

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
}

/** The one payment a task completion without escrow may make. Amounts in tinybars. */
export interface ExpectedPayment {
  /** the poster: the transaction id's account (pays the fees) and the only account debited */
  payer: string;
  claimer: string;
  treasury: string;
  /** debited from the payer */
  priceTinybars: bigint;
  /** credited to the treasury; the claimer gets price - fee */
  feeTinybars: bigint;
  /** the memo the transfer must carry (prepare-payment sets it), when given */
  memo?: string;
}

export interface TransferCheckPolicy {
  /** node account ids this service submits to; the transfer must be frozen for exactly one of them */
  nodeAccountIds: string[];
  now: number;
  /** upper bound of the max transaction fee the poster may set (default 2 HBAR) */
  maxTransactionFeeTinybars?: bigint;
  /** upper bound of the valid duration (default 180 s) */
  maxValidDurationSeconds?: number;
  /** a valid start this far in the future is refused (default 10 s) */
  clockSkewMs?: number;
  /** the transaction must stay valid at least this long after now (default 10 s) */
  minRemainingMs?: number;
}

export interface CheckedPayment {
  /** the signed transaction, ready for the idempotent submitter */
  transaction: TransferTransaction;
  /** SDK form 0.0.x@seconds.nanos */
  transactionId: string;
  validUntil: Date;
}

const tinybarsOf = (h: Hbar): bigint => BigInt(h.toTinybars().toString());

/** The expected net HBAR movement of a payment: payer -price, claimer +(price - fee), treasury +fee. */
export function expectedNetTransfers(p: ExpectedPayment): Map<string, bigint> {
  const net = new Map<string, bigint>([[p.payer, -p.priceTinybars]]);
  const toClaimer = p.priceTinybars - p.feeTinybars;
  if (toClaimer > 0n) net.set(p.claimer, (net.get(p.claimer) ?? 0n) + toClaimer);
  if (p.feeTinybars > 0n) net.set(p.treasury, (net.get(p.treasury) ?? 0n) + p.feeTinybars);
  return net;
}

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
 * Checks that `tx` is exactly the expected payment, signed by the payer's key, still valid, and
 * returns it for submission. Throws TransferCheckError (status 400 or 403) on the first problem.
 */
export function checkPayment(tx: Transaction, expected: ExpectedPayment, payerKey: PublicKey, policy: TransferCheckPolicy): CheckedPayment {
  const fail = (reason: TransferCheckReason, message: string, hint?: string): never => {
    throw new TransferCheckError(reason, message, hint);
  };
  // 1. one plain CryptoTransfer (a ScheduleCreate or any other body decodes to another class)
  if (!(tx instanceof TransferTransaction) || tx.constructor !== TransferTransaction) {
    fail('invalid_transaction_type', `only a plain CryptoTransfer is accepted, got ${tx.constructor.name}`, 'Sign the transfer prepare-payment returns');
  }
  const transfer = tx as TransferTransaction;
  singleBodyBytes(transfer);
  const id = transfer.transactionId;
  if (!id || !id.accountId || !id.validStart) return fail('invalid_bytes', 'the transaction has no transaction id');
  if (id.scheduled || (id.nonce && Number(id.nonce.toString()) !== 0)) fail('invalid_transaction_type', 'scheduled or child transaction ids are not accepted');
  const transactionId = id.toString();
  if (id.accountId.toString() !== expected.payer) {
    fail('payer_mismatch', `the transaction is paid by ${id.accountId.toString()}, not by the poster ${expected.payer}`, 'Use TransactionId.generate(<poster account>)');
  }
  const nodes = transfer.nodeAccountIds?.map((n) => n.toString()) ?? [];
  if (nodes.length !== 1 || !policy.nodeAccountIds.includes(nodes[0])) {
    fail('node_not_supported', `the transaction must be frozen for one node of ${policy.nodeAccountIds.join(', ')}`, 'Use setNodeAccountIds with our node');
  }

  // 2. HBAR only, no allowances
  if (transfer.tokenTransfers.size > 0) fail('token_transfers_not_allowed', 'token transfers are not accepted');
  for (const list of transfer.nftTransfers.values()) if (list.length > 0) fail('token_transfers_not_allowed', 'NFT transfers are not accepted');
  const net = new Map<string, bigint>();
  for (const t of transfer.hbarTransfersList) {
    if (t.isApproved) fail('approved_transfer_not_allowed', 'allowance (approved) transfers are not accepted');
    const acct = t.accountId.toString();
    net.set(acct, (net.get(acct) ?? 0n) + tinybarsOf(t.amount));
  }
  for (const [acct, v] of [...net]) if (v === 0n) net.delete(acct);

  // 3. exactly the expected movement, nothing else
  const want = expectedNetTransfers(expected);
  const same = net.size === want.size && [...want].every(([acct, v]) => net.get(acct) === v);
  if (!same) {
    const describe = (m: Map<string, bigint>) => [...m].map(([a, v]) => `${a} ${v > 0n ? '+' : ''}${v}`).join(', ');
    fail('transfers_mismatch', `the transfer moves ${describe(net) || 'nothing'}; expected ${describe(want)} (tinybars)`, 'Sign the transfer prepare-payment returns, unchanged');
  }
  if (expected.memo !== undefined && transfer.transactionMemo !== expected.memo) fail('memo_mismatch', `the transaction memo must be ${JSON.stringify(expected.memo)}`);

  // 4. fee and validity window
  const maxFee = policy.maxTransactionFeeTinybars ?? 200_000_000n;
  const fee = transfer.maxTransactionFee ? tinybarsOf(transfer.maxTransactionFee) : 0n;
  if (fee <= 0n || fee > maxFee) fail('max_fee_too_high', `max transaction fee must be between 1 and ${maxFee} tinybars`);
  const duration = transfer.transactionValidDuration ?? 120;
  const maxDuration = policy.maxValidDurationSeconds ?? 180;
  if (duration <= 0 || duration > maxDuration) fail('valid_duration_too_long', `valid duration must be at most ${maxDuration} s`);
  const validStart = id.validStart.toDate();
  const validUntil = new Date(validStart.getTime() + duration * 1000);
  if (validStart.getTime() > policy.now + (policy.clockSkewMs ?? 10_000)) fail('transaction_not_yet_valid', 'the valid start is in the future');
  if (validUntil.getTime() < policy.now + (policy.minRemainingMs ?? 10_000)) {
    fail('transaction_expired', 'the transaction has expired or is about to', 'Call prepare-payment again, sign at once and send within about 100 s');
  }

  // 5. the payer's signature
  const prefix = Buffer.from(payerKey.toBytesRaw());
  const pairs = (transfer as unknown as Internals)._signedTransactions.list[0].sigMap?.sigPair ?? [];
  const present = pairs.some((p) => p.pubKeyPrefix && p.pubKeyPrefix.length > 0 && prefix.subarray(0, p.pubKeyPrefix.length).equals(Buffer.from(p.pubKeyPrefix)));
  if (!present) fail('missing_payer_signature', `the transaction is not signed by the key of ${expected.payer}`, 'Sign the body bytes with the poster key (POST /market/sign) and send signature and publicKey, or send signed txBytes');
  let valid = false;
  try {
    valid = payerKey.verifyTransaction(transfer);
  } catch {
    valid = false;
  }
  if (!valid) fail('invalid_payer_signature', `the signature of ${expected.payer} does not verify`, 'Sign the exact bytes prepare-payment returned');
  return { transaction: transfer, transactionId, validUntil };
}
