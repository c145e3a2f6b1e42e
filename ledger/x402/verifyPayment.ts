// Verification of an x402 `exact` payment on Hedera (HBAR only). Pure: the decoded transaction is
// checked against the payment requirements; the payer's public key, the "seen before" check and the
// clock are injected, so every rule is unit-testable without a network.
//
// The fee payer signs and pays fees for whatever it settles, so the rules are strict (DESIGN.md 8):
//  - one plain CryptoTransfer (never a ScheduleCreate or any other body), one transaction id, one
//    node, transaction id account == extra.feePayer;
//  - no token or NFT transfers at all (the fee payer's signature would authorise an NFT transfer out
//    of its own account), no approved (allowance) transfers;
//  - HBAR transfers sum to zero; net +amount to payTo; exactly one debited account (the payer), which
//    is neither the fee payer nor payTo; nobody else credited; the fee payer never debited;
//  - the payer's signature present and valid against the payer's key (from the mirror);
//  - max transaction fee and valid duration bounded; not expired, not from the future; not seen.
import { AccountId, Hbar, PublicKey, Transaction, TransferTransaction } from '@hashgraph/sdk';
import type { PaymentPayload, PaymentRequirements } from '@x402/core/types';
import { ENTITY_ID, EXACT_SCHEME, HBAR_ASSET, isHederaNetwork } from '@agent-passport/core/x402/network';

export type InvalidReason =
  | 'unsupported_scheme'
  | 'invalid_network'
  | 'network_mismatch'
  | 'unsupported_asset'
  | 'invalid_requirements'
  | 'requirements_mismatch'
  | 'invalid_payload'
  | 'invalid_transaction_type'
  | 'multiple_transactions'
  | 'node_not_supported'
  | 'fee_payer_mismatch'
  | 'fee_payer_debited'
  | 'token_transfers_not_allowed'
  | 'approved_transfer_not_allowed'
  | 'transfers_do_not_balance'
  | 'pay_to_mismatch'
  | 'amount_mismatch'
  | 'unexpected_recipient'
  | 'invalid_payer'
  | 'payer_key_unavailable'
  | 'missing_payer_signature'
  | 'invalid_payer_signature'
  | 'max_fee_too_high'
  | 'valid_duration_too_long'
  | 'transaction_expired'
  | 'transaction_not_yet_valid'
  | 'transaction_already_used';

export interface VerifyPolicy {
  /** the facilitator's fee payer account */
  feePayer: string;
  /** the x402 network this facilitator serves, e.g. hedera:local */
  network: string;
  /** node account ids the facilitator submits to; empty = any */
  nodeAccountIds?: string[];
  /** upper bound of the max transaction fee the payer may set, in tinybars (default 2 HBAR) */
  maxTransactionFeeTinybars?: bigint;
  /** upper bound of the valid duration in seconds (default 180) */
  maxValidDurationSeconds?: number;
  /** tolerated clock skew for a valid start in the future, ms (default 10 s) */
  clockSkewMs?: number;
}

export interface VerifyDeps {
  /** the payer's current public key (from the mirror), or null when unknown / a key list */
  getPayerPublicKey(accountId: string): Promise<PublicKey | null>;
  /** true when this transaction id was settled or observed before */
  isSeen(transactionId: string): Promise<boolean>;
  now?: () => number;
}

export interface DecodedPayment {
  transaction: TransferTransaction;
  transactionId: string;
  payer: string;
  payTo: string;
  amountTinybars: bigint;
  validStart: Date;
  validUntil: Date;
}

export type VerifyResult =
  | { isValid: true; payer: string; payment: DecodedPayment }
  | { isValid: false; invalidReason: InvalidReason; invalidMessage: string; payer?: string; transactionId?: string };

const fail = (invalidReason: InvalidReason, invalidMessage: string, extra: { payer?: string; transactionId?: string } = {}): VerifyResult => ({
  isValid: false,
  invalidReason,
  invalidMessage,
  ...extra,
});

const tinybarsOf = (h: Hbar): bigint => BigInt(h.toTinybars().toString());

/** Decodes the base64 transaction of an x402 payload; null when it is not a Hedera transaction. */
export function decodePaymentTransaction(base64: unknown): Transaction | null {
  if (typeof base64 !== 'string' || base64.length === 0 || base64.length > 16_384) return null;
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(base64)) return null;
  try {
    return Transaction.fromBytes(Uint8Array.from(Buffer.from(base64, 'base64')));
  } catch {
    return null;
  }
}

/** The base64 transaction of an exact-scheme payload ({ transaction: base64 }), undecoded. */
export function payloadTransactionBase64(payload: PaymentPayload | undefined): unknown {
  return (payload?.payload as { transaction?: unknown } | undefined)?.transaction;
}

/** The payment transaction of an exact-scheme payload; null when absent or not decodable. */
export function paymentTransactionOf(payload: PaymentPayload | undefined): Transaction | null {
  return decodePaymentTransaction(payloadTransactionBase64(payload));
}

/**
 * The single account an HBAR transfer debits (net), in shard.realm.num form: the payer of an exact
 * payment. Null when the transaction is not a transfer or debits no or several accounts.
 */
export function transferPayerOf(tx: Transaction): string | null {
  if (!(tx instanceof TransferTransaction)) return null;
  const net = new Map<string, bigint>();
  for (const t of tx.hbarTransfersList) {
    const acct = t.accountId.toString();
    net.set(acct, (net.get(acct) ?? 0n) + tinybarsOf(t.amount));
  }
  const debited = [...net.entries()].filter(([, v]) => v < 0n);
  return debited.length === 1 ? debited[0][0] : null;
}

/** The client built its payment for exactly these requirements (scheme, network, asset, amount, payTo). */
export function acceptedMatches(accepted: PaymentRequirements | undefined, requirements: PaymentRequirements): boolean {
  return (
    !!accepted &&
    accepted.scheme === requirements.scheme &&
    accepted.network === requirements.network &&
    accepted.asset === requirements.asset &&
    accepted.amount === requirements.amount &&
    accepted.payTo === requirements.payTo
  );
}

/** Static checks of the requirements themselves (asset, network, ids). */
export function checkRequirements(requirements: PaymentRequirements, policy: VerifyPolicy): VerifyResult | null {
  if (requirements.scheme !== EXACT_SCHEME) return fail('unsupported_scheme', `scheme ${requirements.scheme} is not supported`);
  if (!isHederaNetwork(requirements.network)) return fail('invalid_network', `network ${requirements.network} is not a Hedera network`);
  if (requirements.network !== policy.network) return fail('network_mismatch', `this facilitator settles on ${policy.network}`);
  if (requirements.asset !== HBAR_ASSET) return fail('unsupported_asset', 'only HBAR (asset 0.0.0) is accepted');
  if (!ENTITY_ID.test(requirements.payTo)) return fail('invalid_requirements', 'payTo is not an account id');
  if (!/^[1-9]\d*$/.test(requirements.amount)) return fail('invalid_requirements', 'amount must be a positive integer of tinybars');
  const feePayer = (requirements.extra as { feePayer?: unknown } | undefined)?.feePayer;
  if (feePayer !== policy.feePayer) return fail('fee_payer_mismatch', `extra.feePayer must be ${policy.feePayer}`);
  return null;
}

/**
 * Full verification of a payment payload against requirements. `payload.accepted` must match the
 * requirements the server built for this request (amount and payTo are rebuilt from the request).
 */
export async function verifyHederaPayment(
  paymentPayload: PaymentPayload,
  requirements: PaymentRequirements,
  policy: VerifyPolicy,
  deps: VerifyDeps,
): Promise<VerifyResult> {
  const reqProblem = checkRequirements(requirements, policy);
  if (reqProblem) return reqProblem;
  if (!acceptedMatches(paymentPayload?.accepted, requirements)) {
    return fail('requirements_mismatch', 'the payment was built for different requirements');
  }

  const tx = paymentTransactionOf(paymentPayload);
  if (!tx) return fail('invalid_payload', 'payload.transaction is not a base64 Hedera transaction');
  return verifyDecodedTransaction(tx, requirements, policy, deps);
}

/** The transaction-level rules (exported for tests that build transactions directly). */
export async function verifyDecodedTransaction(
  tx: Transaction,
  requirements: PaymentRequirements,
  policy: VerifyPolicy,
  deps: VerifyDeps,
): Promise<VerifyResult> {
  // 1. a plain CryptoTransfer: not scheduled, not any other body
  if (!(tx instanceof TransferTransaction) || tx.constructor !== TransferTransaction) {
    return fail('invalid_transaction_type', `only a plain CryptoTransfer is accepted, got ${tx.constructor.name}`);
  }
  const internals = tx as unknown as {
    _signedTransactions: { list: { bodyBytes?: Uint8Array | null; sigMap?: unknown }[] };
    _transactionIds: { list: unknown[] };
  };
  if (internals._transactionIds.list.length !== 1 || internals._signedTransactions.list.length !== 1) {
    return fail('multiple_transactions', 'the payment must hold exactly one signed transaction for one node');
  }
  const id = tx.transactionId;
  if (!id || !id.accountId || !id.validStart) return fail('invalid_payload', 'transaction id missing');
  const transactionId = id.toString();
  if (id.scheduled || (id.nonce && Number(id.nonce.toString()) !== 0)) {
    return fail('invalid_transaction_type', 'scheduled or child transaction ids are not accepted', { transactionId });
  }
  // 2. the fee payer pays the fees: transaction id account == extra.feePayer
  if (id.accountId.toString() !== policy.feePayer) {
    return fail('fee_payer_mismatch', `transaction id account must be the fee payer ${policy.feePayer}`, { transactionId });
  }
  const nodes = tx.nodeAccountIds?.map((n) => n.toString()) ?? [];
  if (nodes.length !== 1 || (policy.nodeAccountIds && policy.nodeAccountIds.length > 0 && !policy.nodeAccountIds.includes(nodes[0]))) {
    return fail('node_not_supported', `the transaction must name one node of ${policy.nodeAccountIds?.join(', ') || 'the network'}`, { transactionId });
  }

  // 3. HBAR only: no fungible token or NFT transfers at all
  if (tx.tokenTransfers.size > 0) return fail('token_transfers_not_allowed', 'token transfers are not accepted', { transactionId });
  let nftCount = 0;
  for (const list of tx.nftTransfers.values()) nftCount += list.length;
  if (nftCount > 0) return fail('token_transfers_not_allowed', 'NFT transfers are not accepted', { transactionId });

  // 4. HBAR transfer arithmetic
  const net = new Map<string, bigint>();
  for (const t of tx.hbarTransfersList) {
    if (t.isApproved) return fail('approved_transfer_not_allowed', 'allowance (approved) transfers are not accepted', { transactionId });
    const acct = t.accountId.toString();
    net.set(acct, (net.get(acct) ?? 0n) + tinybarsOf(t.amount));
  }
  let sum = 0n;
  for (const v of net.values()) sum += v;
  if (sum !== 0n) return fail('transfers_do_not_balance', 'HBAR transfers do not sum to zero', { transactionId });
  if ((net.get(policy.feePayer) ?? 0n) < 0n) return fail('fee_payer_debited', 'the fee payer must never be debited', { transactionId });
  for (const t of tx.hbarTransfersList) {
    if (t.accountId.toString() === policy.feePayer && tinybarsOf(t.amount) < 0n) {
      return fail('fee_payer_debited', 'the fee payer must never be debited', { transactionId });
    }
  }
  const amount = BigInt(requirements.amount);
  const toPayTo = net.get(requirements.payTo) ?? 0n;
  if (toPayTo <= 0n) return fail('pay_to_mismatch', `nothing is paid to ${requirements.payTo}`, { transactionId });
  if (toPayTo !== amount) return fail('amount_mismatch', `pays ${toPayTo} tinybars to payTo, ${amount} required`, { transactionId });
  const debited = [...net.entries()].filter(([, v]) => v < 0n);
  const credited = [...net.entries()].filter(([, v]) => v > 0n);
  if (credited.length !== 1) return fail('unexpected_recipient', 'only payTo may be credited', { transactionId });
  if (debited.length !== 1) return fail('invalid_payer', 'exactly one account must pay', { transactionId });
  const payer = debited[0][0];
  if (payer === policy.feePayer || payer === requirements.payTo) return fail('invalid_payer', 'the payer must differ from the fee payer and payTo', { transactionId });
  try {
    AccountId.fromString(payer);
  } catch {
    return fail('invalid_payer', 'payer is not an account id', { transactionId });
  }

  // 5. fee and validity window
  const maxFee = policy.maxTransactionFeeTinybars ?? 200_000_000n;
  const fee = tx.maxTransactionFee ? tinybarsOf(tx.maxTransactionFee) : 0n;
  if (fee <= 0n || fee > maxFee) return fail('max_fee_too_high', `max transaction fee must be between 1 and ${maxFee} tinybars`, { transactionId, payer });
  const duration = tx.transactionValidDuration ?? 120;
  const maxDuration = policy.maxValidDurationSeconds ?? 180;
  if (duration <= 0 || duration > maxDuration) return fail('valid_duration_too_long', `valid duration must be at most ${maxDuration} s`, { transactionId, payer });
  const now = deps.now ? deps.now() : Date.now();
  const validStart = id.validStart.toDate();
  const validUntil = new Date(validStart.getTime() + duration * 1000);
  if (validStart.getTime() > now + (policy.clockSkewMs ?? 10_000)) return fail('transaction_not_yet_valid', 'the valid start is in the future', { transactionId, payer });
  if (validUntil.getTime() <= now) return fail('transaction_expired', 'the transaction expired; build a new payment', { transactionId, payer });

  // 6. the payer's signature, against the payer's key on the ledger
  const key = await deps.getPayerPublicKey(payer);
  if (!key) return fail('payer_key_unavailable', `cannot read a single ED25519/ECDSA key of ${payer}`, { transactionId, payer });
  const prefix = key.toBytesRaw();
  const sigPairs = ((internals._signedTransactions.list[0].sigMap as { sigPair?: { pubKeyPrefix?: Uint8Array }[] } | null)?.sigPair ?? []);
  const present = sigPairs.some((p) => p.pubKeyPrefix && Buffer.from(p.pubKeyPrefix).equals(Buffer.from(prefix)));
  if (!present) return fail('missing_payer_signature', `the transaction is not signed by ${payer}`, { transactionId, payer });
  let valid = false;
  try {
    valid = key.verifyTransaction(tx);
  } catch {
    valid = false;
  }
  if (!valid) return fail('invalid_payer_signature', `the signature of ${payer} does not verify`, { transactionId, payer });

  // 7. replay
  if (await deps.isSeen(transactionId)) return fail('transaction_already_used', 'this payment was already used', { transactionId, payer });

  return {
    isValid: true,
    payer,
    payment: { transaction: tx, transactionId, payer, payTo: requirements.payTo, amountTinybars: amount, validStart, validUntil },
  };
}
