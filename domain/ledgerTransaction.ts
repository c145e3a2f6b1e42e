/**
 * Client-supplied Hedera transaction bytes, read and judged without the SDK (issue 19 item 1): the
 * rules that decide whether a transaction a client signed may be submitted by the service, applied
 * alike by the API (ledger/transferCheck.ts, ledger/scheduleSignCheck.ts wrap them and add the
 * signature checks), by the activity that submits the bytes, and by the taskLifecycle Update
 * validators, which must stay deterministic and cannot load the SDK.
 *
 * The reader decodes just the HAPI messages a client payment or ScheduleSign is made of (protobuf
 * wire format): TransactionList / Transaction { signedTransactionBytes } / SignedTransaction
 * { bodyBytes, sigMap } / TransactionBody. Any field of the body outside the expected ones (a batch
 * key, custom fee limits, hooks on a transfer, token transfers, another transaction type) is
 * reported, so "exactly the expected transaction" means exactly.
 *
 * Pure: no I/O, no clock unless the caller passes `now`.
 */

export type ClientTxReason =
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
  | 'schedule_not_pending'
  | 'duplicate_signature'
  | 'unexpected_field';

export interface ClientTxProblem {
  reason: ClientTxReason;
  message: string;
  hint?: string;
}

/** One signature of a signed transaction: the key prefix and the signature bytes. */
export interface SigPair {
  prefix: Uint8Array;
  kind: 'ed25519' | 'ecdsa_secp256k1' | 'other';
  signature: Uint8Array;
}

export interface HbarLeg {
  account: string;
  tinybars: bigint;
  approved: boolean;
}

export interface DecodedBody {
  /** the transaction id's account: who pays the fee and must sign */
  payer: string;
  validStartSeconds: bigint;
  validStartNanos: number;
  scheduled: boolean;
  nonce: number;
  node: string;
  maxFeeTinybars: bigint;
  validDurationSeconds: bigint;
  memo: string;
  /** the TransactionBody field number of the transaction type (14 CryptoTransfer, 44 ScheduleSign, ...) */
  dataField: number | null;
  /** CryptoTransfer: the HBAR legs in order */
  hbarLegs: HbarLeg[];
  /** CryptoTransfer: number of token transfer lists (fungible or NFT) */
  tokenTransferLists: number;
  /** ScheduleSign: the schedule */
  scheduleId: string | null;
  /** fields outside the ones this reader expects, as `Message.field` */
  unexpected: string[];
}

export interface DecodedTransaction {
  /** one per node the transaction was frozen for */
  entries: { bodyBytes: Uint8Array; sigPairs: SigPair[]; body: DecodedBody }[];
}

export const CRYPTO_TRANSFER_FIELD = 14;
export const SCHEDULE_SIGN_FIELD = 44;
const DATA_NAMES: Record<number, string> = { 14: 'CryptoTransfer', 42: 'ScheduleCreate', 43: 'ScheduleDelete', 44: 'ScheduleSign', 27: 'ConsensusSubmitMessage', 11: 'CryptoCreate', 48: 'CryptoApproveAllowance', 74: 'AtomicBatch' };

/** The base64 text clients send is at most this long (16 KB, as the API's schema allows). */
export const CLIENT_TX_BASE64_MAX = 16_384;

class WireError extends Error {}

// ------------------------------------------------------------------ protobuf wire format

interface Field {
  no: number;
  wire: number;
  varint?: bigint;
  bytes?: Uint8Array;
}

function readFields(buf: Uint8Array): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (let i = 0; i < 10; i++) {
      if (pos >= buf.length) throw new WireError('truncated varint');
      const b = buf[pos++];
      result |= BigInt(b & 0x7f) << shift;
      if ((b & 0x80) === 0) return result;
      shift += 7n;
    }
    throw new WireError('varint too long');
  };
  while (pos < buf.length) {
    const key = varint();
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (no === 0) throw new WireError('field number 0');
    if (wire === 0) out.push({ no, wire, varint: varint() });
    else if (wire === 2) {
      const len = Number(varint());
      if (len < 0 || pos + len > buf.length) throw new WireError('truncated bytes');
      out.push({ no, wire, bytes: buf.subarray(pos, pos + len) });
      pos += len;
    } else if (wire === 1) {
      if (pos + 8 > buf.length) throw new WireError('truncated fixed64');
      out.push({ no, wire });
      pos += 8;
    } else if (wire === 5) {
      if (pos + 4 > buf.length) throw new WireError('truncated fixed32');
      out.push({ no, wire });
      pos += 4;
    } else throw new WireError(`unsupported wire type ${wire}`);
  }
  return out;
}

const int64 = (v: bigint | undefined): bigint => BigInt.asIntN(64, v ?? 0n);
const zigzag = (v: bigint | undefined): bigint => {
  const n = BigInt.asUintN(64, v ?? 0n);
  return (n >> 1n) ^ -(n & 1n);
};

function bytesOf(f: Field, where: string): Uint8Array {
  if (f.wire !== 2 || !f.bytes) throw new WireError(`${where}: not a message`);
  return f.bytes;
}

function varintOf(f: Field, where: string): bigint {
  if (f.wire !== 0 || f.varint === undefined) throw new WireError(`${where}: not a number`);
  return f.varint;
}

/** Walks a message's fields; fields not handled land in `unexpected` as `Message.n`. */
function walk(buf: Uint8Array, name: string, unexpected: string[], handle: (f: Field) => boolean): void {
  for (const f of readFields(buf)) if (!handle(f)) unexpected.push(`${name}.${f.no}`);
}

/** shard.realm.num of an AccountID; an alias (field 4) is reported as unexpected. */
function entityId(buf: Uint8Array, name: string, numField: number, unexpected: string[]): string {
  let shard = 0n;
  let realm = 0n;
  let num = 0n;
  walk(buf, name, unexpected, (f) => {
    if (f.no === 1) shard = int64(varintOf(f, name));
    else if (f.no === 2) realm = int64(varintOf(f, name));
    else if (f.no === numField) num = int64(varintOf(f, name));
    else return false;
    return true;
  });
  return `${shard}.${realm}.${num}`;
}

function decodeBody(bodyBytes: Uint8Array): DecodedBody {
  const unexpected: string[] = [];
  const body: DecodedBody = {
    payer: '',
    validStartSeconds: 0n,
    validStartNanos: 0,
    scheduled: false,
    nonce: 0,
    node: '',
    maxFeeTinybars: 0n,
    validDurationSeconds: 0n,
    memo: '',
    dataField: null,
    hbarLegs: [],
    tokenTransferLists: 0,
    scheduleId: null,
    unexpected,
  };
  walk(bodyBytes, 'TransactionBody', unexpected, (f) => {
    switch (f.no) {
      case 1:
        walk(bytesOf(f, 'TransactionID'), 'TransactionID', unexpected, (g) => {
          if (g.no === 1) {
            walk(bytesOf(g, 'Timestamp'), 'Timestamp', unexpected, (h) => {
              if (h.no === 1) body.validStartSeconds = int64(varintOf(h, 'Timestamp'));
              else if (h.no === 2) body.validStartNanos = Number(BigInt.asIntN(32, varintOf(h, 'Timestamp')));
              else return false;
              return true;
            });
          } else if (g.no === 2) body.payer = entityId(bytesOf(g, 'AccountID'), 'AccountID', 3, unexpected);
          else if (g.no === 3) body.scheduled = varintOf(g, 'TransactionID') !== 0n;
          else if (g.no === 4) body.nonce = Number(BigInt.asIntN(32, varintOf(g, 'TransactionID')));
          else return false;
          return true;
        });
        return true;
      case 2:
        body.node = entityId(bytesOf(f, 'AccountID'), 'AccountID', 3, unexpected);
        return true;
      case 3:
        body.maxFeeTinybars = BigInt.asUintN(64, varintOf(f, 'transactionFee'));
        return true;
      case 4:
        walk(bytesOf(f, 'Duration'), 'Duration', unexpected, (g) => {
          if (g.no !== 1) return false;
          body.validDurationSeconds = int64(varintOf(g, 'Duration'));
          return true;
        });
        return true;
      case 5: // generateRecord (deprecated, ignored by the network)
        varintOf(f, 'generateRecord');
        return true;
      case 6:
        body.memo = new TextDecoder('utf-8', { fatal: true }).decode(bytesOf(f, 'memo'));
        return true;
      case CRYPTO_TRANSFER_FIELD:
        body.dataField = f.no;
        walk(bytesOf(f, 'CryptoTransfer'), 'CryptoTransfer', unexpected, (g) => {
          if (g.no === 2) {
            body.tokenTransferLists++;
            return true;
          }
          if (g.no !== 1) return false;
          walk(bytesOf(g, 'TransferList'), 'TransferList', unexpected, (h) => {
            if (h.no !== 1) return false;
            const leg: HbarLeg = { account: '', tinybars: 0n, approved: false };
            walk(bytesOf(h, 'AccountAmount'), 'AccountAmount', unexpected, (k) => {
              if (k.no === 1) leg.account = entityId(bytesOf(k, 'AccountID'), 'AccountID', 3, unexpected);
              else if (k.no === 2) leg.tinybars = zigzag(varintOf(k, 'amount'));
              else if (k.no === 3) leg.approved = varintOf(k, 'is_approval') !== 0n;
              else return false;
              return true;
            });
            body.hbarLegs.push(leg);
            return true;
          });
          return true;
        });
        return true;
      case SCHEDULE_SIGN_FIELD:
        body.dataField = f.no;
        walk(bytesOf(f, 'ScheduleSign'), 'ScheduleSign', unexpected, (g) => {
          if (g.no !== 1) return false;
          body.scheduleId = entityId(bytesOf(g, 'ScheduleID'), 'ScheduleID', 3, unexpected);
          return true;
        });
        return true;
      default:
        // any other transaction type: known by its field number, its content not read
        if (f.no >= 7 && f.no <= 100 && f.no !== 73 && f.wire === 2) {
          if (body.dataField !== null) return false;
          body.dataField = f.no;
          return true;
        }
        return false;
    }
  });
  return body;
}

function decodeSignedTransaction(buf: Uint8Array): { bodyBytes: Uint8Array; sigPairs: SigPair[]; unexpected: string[] } {
  const unexpected: string[] = [];
  let bodyBytes: Uint8Array | null = null;
  const sigPairs: SigPair[] = [];
  walk(buf, 'SignedTransaction', unexpected, (f) => {
    if (f.no === 1) bodyBytes = bytesOf(f, 'bodyBytes');
    else if (f.no === 2) {
      walk(bytesOf(f, 'SignatureMap'), 'SignatureMap', unexpected, (g) => {
        if (g.no !== 1) return false;
        const pair: SigPair = { prefix: new Uint8Array(), kind: 'other', signature: new Uint8Array() };
        walk(bytesOf(g, 'SignaturePair'), 'SignaturePair', unexpected, (h) => {
          if (h.no === 1) pair.prefix = bytesOf(h, 'pubKeyPrefix');
          else if (h.no >= 2 && h.no <= 6) {
            pair.signature = bytesOf(h, 'signature');
            pair.kind = h.no === 3 ? 'ed25519' : h.no === 6 ? 'ecdsa_secp256k1' : 'other';
          } else return false;
          return true;
        });
        sigPairs.push(pair);
        return true;
      });
    } else return false;
    return true;
  });
  if (!bodyBytes) throw new WireError('no body bytes');
  return { bodyBytes, sigPairs, unexpected };
}

/** The signed transactions of `Transaction.toBytes()` (a TransactionList, or one Transaction). */
function transactionsOf(bytes: Uint8Array): Uint8Array[] {
  const fields = readFields(bytes);
  const asList = fields.length > 0 && fields.every((f) => f.no === 1 && f.wire === 2);
  if (asList) {
    // a TransactionList: each entry a Transaction { signedTransactionBytes = 5 }
    try {
      return fields.map((f) => signedBytesOf(f.bytes!));
    } catch {
      // not a list after all: fall through and read it as one Transaction
    }
  }
  return [signedBytesOf(bytes)];
}

function signedBytesOf(transaction: Uint8Array): Uint8Array {
  const fields = readFields(transaction);
  const signed = fields.filter((f) => f.no === 5);
  if (signed.length !== 1 || fields.length !== 1) throw new WireError('a Transaction carries exactly signedTransactionBytes');
  return bytesOf(signed[0], 'signedTransactionBytes');
}

/** Decodes transaction bytes; null when they are not a Hedera transaction this reader understands. */
export function decodeClientTransaction(bytes: Uint8Array): DecodedTransaction | null {
  try {
    const entries = transactionsOf(bytes).map((signed) => {
      const s = decodeSignedTransaction(signed);
      const body = decodeBody(s.bodyBytes);
      body.unexpected.push(...s.unexpected);
      return { bodyBytes: s.bodyBytes, sigPairs: s.sigPairs, body };
    });
    return entries.length > 0 ? { entries } : null;
  } catch {
    return null;
  }
}

const B64 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** Standard base64 (with or without padding) to bytes; null when it is not base64. */
export function base64ToBytes(text: string): Uint8Array | null {
  const s = text.replace(/=+$/, '');
  if (!/^[A-Za-z0-9+/]*$/.test(s) || s.length % 4 === 1) return null;
  const out = new Uint8Array(Math.floor((s.length * 3) / 4));
  let bits = 0;
  let value = 0;
  let o = 0;
  for (const ch of s) {
    value = (value << 6) | B64.indexOf(ch);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = (value >> bits) & 0xff;
    }
  }
  return out;
}

/** Decodes base64 client bytes (at most CLIENT_TX_BASE64_MAX characters). */
export function decodeClientTransactionBase64(text: string): DecodedTransaction | null {
  if (typeof text !== 'string' || text.length === 0 || text.length > CLIENT_TX_BASE64_MAX) return null;
  const bytes = base64ToBytes(text);
  return bytes ? decodeClientTransaction(bytes) : null;
}

// ------------------------------------------------------------------ the rules

export interface ClientTxPolicy {
  /** node account ids the service submits to; unknown (undefined): not checked here */
  nodeAccountIds?: string[];
  /** upper bound of the max transaction fee (default 2 HBAR for a payment, 5 HBAR, the SDK's default, for a ScheduleSign) */
  maxTransactionFeeTinybars?: bigint;
  /** upper bound of the valid duration (default 180 s) */
  maxValidDurationSeconds?: number;
  /** the time now (ms); undefined: the validity window is not checked (workflow validators) */
  now?: number;
  /** a valid start this far in the future is refused (default 10 s) */
  clockSkewMs?: number;
  /** the transaction must stay valid at least this long after now (default 10 s) */
  minRemainingMs?: number;
}

/** The one payment a task completion without escrow may make (tinybars). */
export interface ExpectedPayment {
  /** the poster: the transaction id's account (pays the fees) and the only account debited */
  payer: string;
  claimer: string;
  /** the treasury (credited the fee); undefined: any one account other than payer and claimer (validators of tasks posted before it was known) */
  treasury?: string;
  /** debited from the payer */
  priceTinybars: bigint;
  /** credited to the treasury; the claimer gets price - fee */
  feeTinybars: bigint;
  /** the memo the transfer must carry (prepare-payment sets it), when given */
  memo?: string;
}

/** What a ScheduleSign the service pays for may be. */
export interface ExpectedScheduleSign {
  /** the service's operator: the transaction id's account; undefined: not checked here */
  payer?: string;
  /** the schedules of this task still waiting for the poster's signature */
  pendingScheduleIds: string[];
  /** the schedule this signature is for (one of the pending ones) */
  scheduleId?: string;
}

/** The expected net HBAR movement of a payment: payer -price, claimer +(price - fee), treasury +fee. */
export function expectedNetTransfers(p: ExpectedPayment & { treasury: string }): Map<string, bigint> {
  const net = new Map<string, bigint>([[p.payer, -p.priceTinybars]]);
  const toClaimer = p.priceTinybars - p.feeTinybars;
  if (toClaimer > 0n) net.set(p.claimer, (net.get(p.claimer) ?? 0n) + toClaimer);
  if (p.feeTinybars > 0n) net.set(p.treasury, (net.get(p.treasury) ?? 0n) + p.feeTinybars);
  return net;
}

const problem = (reason: ClientTxReason, message: string, hint?: string): ClientTxProblem => ({ reason, message, hint });

/** The one entry of a transaction frozen for one node, or the problem. */
function single(tx: DecodedTransaction): DecodedTransaction['entries'][number] | ClientTxProblem {
  if (tx.entries.length !== 1) {
    return problem('multiple_transactions', 'the transaction must be frozen for exactly one node and one transaction id', 'Freeze with setNodeAccountIds([one node]), as prepare-payment does');
  }
  return tx.entries[0];
}

/** Checks shared by every client transaction: id, payer, node, fee, duration, validity window, no stray fields. */
function envelopeProblem(body: DecodedBody, payer: string | undefined, policy: ClientTxPolicy, payerHint: string): ClientTxProblem | null {
  if (!body.payer || (body.validStartSeconds === 0n && body.validStartNanos === 0)) return problem('invalid_bytes', 'the transaction has no transaction id');
  if (body.scheduled || body.nonce !== 0) return problem('invalid_transaction_type', 'scheduled or child transaction ids are not accepted');
  if (payer !== undefined && body.payer !== payer) return problem('payer_mismatch', `the transaction is paid by ${body.payer}, not by ${payer}`, payerHint);
  if (policy.nodeAccountIds && !policy.nodeAccountIds.includes(body.node)) {
    return problem('node_not_supported', `the transaction must be frozen for one node of ${policy.nodeAccountIds.join(', ')}`, 'Use setNodeAccountIds with our node');
  }
  if (body.unexpected.length > 0) return problem('unexpected_field', `the transaction carries fields that are not accepted (${body.unexpected.slice(0, 5).join(', ')})`);
  return null;
}

function boundsProblem(body: DecodedBody, policy: ClientTxPolicy, expiredHint: string, defaultMaxFee: bigint): ClientTxProblem | null {
  const maxFee = policy.maxTransactionFeeTinybars ?? defaultMaxFee;
  if (body.maxFeeTinybars <= 0n || body.maxFeeTinybars > maxFee) return problem('max_fee_too_high', `max transaction fee must be between 1 and ${maxFee} tinybars`);
  const maxDuration = BigInt(policy.maxValidDurationSeconds ?? 180);
  if (body.validDurationSeconds <= 0n || body.validDurationSeconds > maxDuration) return problem('valid_duration_too_long', `valid duration must be at most ${maxDuration} s`);
  if (policy.now !== undefined) {
    const validStart = Number(body.validStartSeconds) * 1000 + Math.floor(body.validStartNanos / 1e6);
    const validUntil = validStart + Number(body.validDurationSeconds) * 1000;
    if (validStart > policy.now + (policy.clockSkewMs ?? 10_000)) return problem('transaction_not_yet_valid', 'the valid start is in the future');
    if (validUntil < policy.now + (policy.minRemainingMs ?? 10_000)) return problem('transaction_expired', 'the transaction has expired or is about to', expiredHint);
  }
  return null;
}

const describeNet = (m: Map<string, bigint>) => [...m].map(([a, v]) => `${a} ${v > 0n ? '+' : ''}${v}`).join(', ');

/**
 * Why a client-signed transfer is not exactly the expected payment (one plain CryptoTransfer, paid
 * by the poster, moving exactly price from the poster to the claimer and the treasury, with the
 * memo, for one of our nodes, within the fee and time bounds), or null when it is. Signatures are
 * checked by the caller that has the poster's key (ledger/transferCheck.ts).
 */
export function directPaymentProblem(tx: DecodedTransaction, expected: ExpectedPayment, policy: ClientTxPolicy): ClientTxProblem | null {
  const entry = single(tx);
  if ('reason' in entry) return entry;
  const body = entry.body;
  if (body.dataField !== CRYPTO_TRANSFER_FIELD) {
    return problem('invalid_transaction_type', `only a plain CryptoTransfer is accepted, got ${DATA_NAMES[body.dataField ?? 0] ?? `transaction type ${body.dataField ?? 'none'}`}`, 'Sign the transfer prepare-payment returns');
  }
  const envelope = envelopeProblem(body, expected.payer, policy, 'Use TransactionId.generate(<poster account>)');
  if (envelope) return envelope;
  if (body.tokenTransferLists > 0) return problem('token_transfers_not_allowed', 'token transfers are not accepted');
  const net = new Map<string, bigint>();
  for (const leg of body.hbarLegs) {
    if (leg.approved) return problem('approved_transfer_not_allowed', 'allowance (approved) transfers are not accepted');
    net.set(leg.account, (net.get(leg.account) ?? 0n) + leg.tinybars);
  }
  for (const [acct, v] of [...net]) if (v === 0n) net.delete(acct);
  // the treasury: given, or (validators of older tasks) the one account credited the fee
  let treasury = expected.treasury;
  if (treasury === undefined) {
    const others = [...net.keys()].filter((a) => a !== expected.payer && a !== expected.claimer);
    treasury = others.length === 1 ? others[0] : '(the treasury)';
  }
  const want = expectedNetTransfers({ ...expected, treasury });
  const same = net.size === want.size && [...want].every(([acct, v]) => net.get(acct) === v);
  if (!same) {
    return problem('transfers_mismatch', `the transfer moves ${describeNet(net) || 'nothing'}; expected ${describeNet(want)} (tinybars)`, 'Sign the transfer prepare-payment returns, unchanged');
  }
  if (expected.memo !== undefined && body.memo !== expected.memo) return problem('memo_mismatch', `the transaction memo must be ${JSON.stringify(expected.memo)}`);
  return boundsProblem(body, policy, 'Call prepare-payment again, sign at once and send within about 100 s', 200_000_000n);
}

/**
 * Why client bytes are not a ScheduleSign the service may pay for and co-sign: exactly one
 * ScheduleSign of one of the task's pending escrow schedules (the named one when given), paid by the
 * operator, no memo, for one of our nodes, within the fee and time bounds. Null when they are.
 */
export function scheduleSignProblem(tx: DecodedTransaction, expected: ExpectedScheduleSign, policy: ClientTxPolicy): ClientTxProblem | null {
  const entry = single(tx);
  if ('reason' in entry) return entry;
  const body = entry.body;
  if (body.dataField !== SCHEDULE_SIGN_FIELD) {
    return problem('invalid_transaction_type', `only a ScheduleSign is accepted, got ${DATA_NAMES[body.dataField ?? 0] ?? `transaction type ${body.dataField ?? 'none'}`}`, 'Send posterPrivateKey: the service builds the ScheduleSign');
  }
  const envelope = envelopeProblem(body, expected.payer, policy, 'The service pays for the ScheduleSign: send posterPrivateKey');
  if (envelope) return envelope;
  const id = body.scheduleId;
  if (!id || !expected.pendingScheduleIds.includes(id) || (expected.scheduleId !== undefined && id !== expected.scheduleId)) {
    const pending = expected.pendingScheduleIds.length > 0 ? expected.pendingScheduleIds.join(', ') : 'none';
    return problem('schedule_not_pending', `the ScheduleSign is for schedule ${id ?? '(none)'}, not a pending escrow schedule of this task (${pending})`, 'GET /market/tasks/{taskId} shows the pending schedules');
  }
  if (body.memo !== '') return problem('memo_mismatch', 'a ScheduleSign carries no memo');
  // the operator pays it: the network charges its real fee (a fraction of a cent); 5 HBAR is the SDK's default cap
  return boundsProblem(body, policy, 'Send the request again (signed transactions are valid 120 s)', 500_000_000n);
}

/**
 * Why a set of poster ScheduleSigns (base64) may not be submitted: each must decode and be a
 * ScheduleSign the service may pay for (scheduleSignProblem) of a different one of the task's
 * pending schedules. The first problem and the schedule it names, or null.
 */
export function scheduleSignsProblem(
  signs: readonly { scheduleId: string; signedBytes: string }[],
  expected: Omit<ExpectedScheduleSign, 'scheduleId'>,
  policy: ClientTxPolicy,
): { scheduleId: string; problem: ClientTxProblem } | null {
  const seen = new Set<string>();
  for (const sign of signs) {
    const scheduleId = sign.scheduleId;
    if (seen.has(scheduleId)) return { scheduleId, problem: problem('duplicate_signature', 'it is sent twice') };
    seen.add(scheduleId);
    const decoded = decodeClientTransactionBase64(sign.signedBytes);
    if (!decoded) return { scheduleId, problem: problem('invalid_bytes', 'the bytes are not a Hedera transaction', 'Send posterPrivateKey: the service signs the schedule in memory') };
    const p = scheduleSignProblem(decoded, { ...expected, scheduleId }, policy);
    if (p) return { scheduleId, problem: p };
  }
  return null;
}

/** Why client bytes (base64) are not exactly the expected direct payment (directPaymentProblem), or null. */
export function directPaymentBytesProblem(bytes: string, expected: ExpectedPayment, policy: ClientTxPolicy): ClientTxProblem | null {
  const decoded = decodeClientTransactionBase64(bytes);
  if (!decoded) return problem('invalid_bytes', 'the bytes are not a Hedera transaction', 'Send the transfer prepare-payment returns, signed');
  return directPaymentProblem(decoded, expected, policy);
}
