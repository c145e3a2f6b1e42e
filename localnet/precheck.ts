// Ingest checks, in the order a Hedera node runs them before a transaction may reach consensus.
import { createHash } from 'node:crypto';
import { proto, Status, big } from './proto.js';
import type { pb as P } from './proto.js';
import { accountNum, txIdFromProto, txKey, type Ns, type TxId } from './ids.js';
import { SigMapSigners, isSatisfied } from './signatures.js';
import { NODE_ACCOUNT, type LedgerState } from './state.js';
import { dataCase, handlers } from './handlers/index.js';

export const TX_FEE = 100_000n; // tinybars charged to the payer of every transaction (0.001 HBAR)
export const QUERY_COST = 50_000n; // tinybars a paid query costs
export const MAX_TX_BYTES = 6144;
const MIN_VALID_DURATION = 15n;
const MAX_VALID_DURATION = 180n;

export interface Parsed {
  raw: Uint8Array; // the proto.Transaction bytes as received (what the journal keeps)
  bodyBytes: Uint8Array;
  sigMap: P.ISignatureMap | null;
  body: P.TransactionBody;
  txId: TxId;
  key: string;
  hash: Uint8Array;
  case: string | undefined;
}

/** Decode a Transaction into its body and signatures; a status when it is not well formed. */
export function parseTransaction(raw: Uint8Array): Parsed | number {
  let tx: P.Transaction;
  try {
    tx = proto.Transaction.decode(raw);
  } catch {
    return Status.INVALID_TRANSACTION;
  }
  let bodyBytes: Uint8Array;
  let sigMap: P.ISignatureMap | null;
  let hashed: Uint8Array;
  if (tx.signedTransactionBytes && tx.signedTransactionBytes.length) {
    try {
      const st = proto.SignedTransaction.decode(tx.signedTransactionBytes);
      bodyBytes = st.bodyBytes;
      sigMap = st.sigMap ?? null;
    } catch {
      return Status.INVALID_TRANSACTION;
    }
    hashed = tx.signedTransactionBytes;
  } else if (tx.bodyBytes && tx.bodyBytes.length) {
    bodyBytes = tx.bodyBytes;
    sigMap = tx.sigMap ?? null;
    hashed = raw;
  } else {
    return Status.INVALID_TRANSACTION_BODY;
  }
  let body: P.TransactionBody;
  try {
    body = proto.TransactionBody.decode(bodyBytes);
  } catch {
    return Status.INVALID_TRANSACTION_BODY;
  }
  const txId = txIdFromProto(body.transactionID);
  if (!txId) return Status.INVALID_TRANSACTION_ID;
  return {
    raw,
    bodyBytes,
    sigMap,
    body,
    txId,
    key: txKey(txId),
    hash: new Uint8Array(createHash('sha384').update(hashed).digest()),
    case: dataCase(body as unknown as Record<string, unknown>),
  };
}

export interface PrecheckOptions {
  now: Ns;
  isDuplicate(key: string): boolean;
  /** COST_ANSWER payments name node 0.0.0: skip the node check there. */
  skipNodeCheck?: boolean;
}

export function precheck(state: LedgerState, p: Parsed, o: PrecheckOptions): number {
  const b = p.body;
  if (p.raw.length > MAX_TX_BYTES) return Status.TRANSACTION_OVERSIZE;
  if (p.txId.scheduled) return Status.INVALID_TRANSACTION_ID; // only the network makes scheduled ids
  if (!o.skipNodeCheck && accountNum(b.nodeAccountID) !== NODE_ACCOUNT) return Status.INVALID_NODE_ACCOUNT;
  const duration = big(b.transactionValidDuration?.seconds);
  if (duration < MIN_VALID_DURATION || duration > MAX_VALID_DURATION) return Status.INVALID_TRANSACTION_DURATION;
  if (p.txId.validStartNs + duration * 1_000_000_000n <= o.now) return Status.TRANSACTION_EXPIRED;
  if (p.txId.validStartNs > o.now) return Status.INVALID_TRANSACTION_START;
  if (Buffer.byteLength(b.memo ?? '') > 100) return Status.MEMO_TOO_LONG;
  if (!p.case) return Status.NOT_SUPPORTED;
  const handler = handlers[p.case];
  const specific = handler.precheck?.((b as unknown as Record<string, unknown>)[p.case]) ?? Status.OK;
  if (specific !== Status.OK) return specific;
  if (o.isDuplicate(p.key)) return Status.DUPLICATE_TRANSACTION;
  const payer = state.accounts.get(p.txId.payer);
  if (!payer) return Status.PAYER_ACCOUNT_NOT_FOUND;
  if (payer.deleted) return Status.ACCOUNT_DELETED;
  if (big(b.transactionFee) < TX_FEE) return Status.INSUFFICIENT_TX_FEE;
  if (payer.balance < TX_FEE) return Status.INSUFFICIENT_PAYER_BALANCE;
  if (!isSatisfied(payer.key, new SigMapSigners(p.bodyBytes, p.sigMap))) return Status.INVALID_SIGNATURE;
  return Status.OK;
}
