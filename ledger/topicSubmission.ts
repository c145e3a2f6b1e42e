// Pre-signed topic messages (A2A send-signed and send-with-key): decode the bytes a client built with
// the SDK (`TopicMessageSubmitTransaction.toBytes()`, one or many chunks), check that they submit
// exactly the expected message to the expected topic, paid and signed by the expected account, and
// split them into one single-chunk transaction per chunk, so each chunk goes through the idempotent
// submitter on its own. Works on the HAPI protobufs (the copy the SDK bundles), never re-signs.
// Also the messages the service builds: signTopicMessage (send-with-key: the sender's key, in memory),
// freezeTopicMessage (the deprecated /a2a/send: frozen unsigned by the API, which holds no key) and
// operatorPaidChunks, the worker's check of such chunks before the operator signs them.
import { createRequire } from 'node:module';
import { AccountId, PrivateKey, PublicKey, Timestamp, TopicMessageSubmitTransaction, Transaction, TransactionId } from '@hashgraph/sdk';
import type * as ProtoPkg from '../node_modules/@hashgraph/sdk/node_modules/@hiero-ledger/proto/lib/index.js';
import { signTransaction, verifySignature } from '@agent-passport/core/keys';
import { CheckedTransaction } from './checkedTransaction.js';

// the proto package nested in (or hoisted beside) the SDK, loaded from the SDK's own location
const sdkRequire = createRequire(createRequire(import.meta.url).resolve('@hashgraph/sdk'));
const { proto } = sdkRequire('@hiero-ledger/proto') as typeof ProtoPkg;
type ITransactionBody = ProtoPkg.proto.ITransactionBody;
type ISignaturePair = ProtoPkg.proto.ISignaturePair;

export class TopicSubmissionError extends Error {
  /** 400: not a well-formed single message to the topic; 403: paid or signed by another account */
  constructor(readonly status: 400 | 403, message: string, readonly hint?: string) {
    super(message);
    this.name = 'TopicSubmissionError';
  }
}

interface Entry {
  nodeAccountId: string;
  bodyBytes: Uint8Array;
  sigPairs: ISignaturePair[];
  body: ITransactionBody;
}

export interface SubmissionChunk {
  /** SDK form 0.0.x@seconds.nanos */
  transactionId: string;
  number: number;
  entries: Entry[];
  message: Uint8Array;
}

export interface DecodedSubmission {
  payerAccountId: string;
  topicId: string;
  /** transaction id of the first chunk (the message's id on the ledger) */
  transactionId: string;
  validStart: Date;
  validDurationSeconds: number;
  maxFeeTinybars: bigint;
  chunks: SubmissionChunk[];
  /** the whole message: the chunks' bytes joined in order */
  message: Uint8Array;
}

const bad = (message: string, hint?: string) => new TopicSubmissionError(400, message, hint);

const num = (v: unknown): number => (v == null ? 0 : Number(String(v)));
const entity = (id: { shardNum?: unknown; realmNum?: unknown; accountNum?: unknown; topicNum?: unknown } | null | undefined, field: 'accountNum' | 'topicNum') =>
  id ? `${num(id.shardNum)}.${num(id.realmNum)}.${num(id[field])}` : '';

function txIdString(id: ProtoPkg.proto.ITransactionID | null | undefined): string {
  if (!id?.accountID || !id.transactionValidStart) return '';
  const ts = new Timestamp(num(id.transactionValidStart.seconds), num(id.transactionValidStart.nanos));
  return new TransactionId(AccountId.fromString(entity(id.accountID, 'accountNum')), ts).toString();
}

/**
 * Decodes SDK transaction bytes (a TransactionList, or one Transaction) holding consensus submit
 * messages; groups them into chunks (one entry per node a chunk was frozen for). Throws
 * TopicSubmissionError for anything that is not that.
 */
export function decodeTopicSubmission(bytes: Uint8Array): DecodedSubmission {
  let txs: ProtoPkg.proto.ITransaction[];
  try {
    const list = proto.TransactionList.decode(bytes);
    txs = list.transactionList.length > 0 ? list.transactionList : [proto.Transaction.decode(bytes)];
  } catch {
    throw bad('txBytes is not a Hedera transaction', 'Send base64 of TopicMessageSubmitTransaction.toBytes() after freeze and sign');
  }
  const byId = new Map<string, Entry[]>();
  for (const t of txs) {
    if (!t.signedTransactionBytes || t.signedTransactionBytes.length === 0) {
      throw bad('txBytes uses the deprecated unsigned-body form', 'Build the transaction with a current Hedera SDK (signedTransactionBytes)');
    }
    let entry: Entry;
    try {
      const st = proto.SignedTransaction.decode(t.signedTransactionBytes);
      const body = proto.TransactionBody.decode(st.bodyBytes);
      entry = { nodeAccountId: entity(body.nodeAccountID, 'accountNum'), bodyBytes: st.bodyBytes, sigPairs: st.sigMap?.sigPair ?? [], body };
    } catch {
      throw bad('txBytes holds an undecodable transaction');
    }
    const kind = (entry.body as { data?: string }).data;
    if (kind !== 'consensusSubmitMessage' || !entry.body.consensusSubmitMessage) {
      throw bad(`txBytes holds a ${kind ?? 'empty'} transaction, not a topic message`, 'Only a TopicMessageSubmitTransaction is accepted');
    }
    const id = txIdString(entry.body.transactionID);
    if (!id) throw bad('a transaction in txBytes has no transaction id');
    if (entry.body.transactionID?.scheduled || num(entry.body.transactionID?.nonce) !== 0) throw bad('scheduled or child transaction ids are not accepted');
    const list = byId.get(id) ?? [];
    list.push(entry);
    byId.set(id, list);
  }

  const chunks: SubmissionChunk[] = [];
  for (const [transactionId, entries] of byId) {
    const first = entries[0].body;
    const msg = first.consensusSubmitMessage!;
    // every node's copy of a chunk must be the same body apart from the node
    for (const e of entries.slice(1)) {
      const m = e.body.consensusSubmitMessage!;
      if (!Buffer.from(m.message ?? []).equals(Buffer.from(msg.message ?? [])) || entity(m.topicID, 'topicNum') !== entity(msg.topicID, 'topicNum') || num(m.chunkInfo?.number) !== num(msg.chunkInfo?.number)) {
        throw bad(`the node copies of transaction ${transactionId} differ`);
      }
    }
    const nodes = entries.map((e) => e.nodeAccountId);
    if (new Set(nodes).size !== nodes.length) throw bad(`transaction ${transactionId} is listed twice for one node`);
    chunks.push({ transactionId, number: msg.chunkInfo ? num(msg.chunkInfo.number) : 1, entries, message: msg.message ?? new Uint8Array() });
  }
  chunks.sort((a, b) => a.number - b.number);

  const head = chunks[0].entries[0].body;
  const topicId = entity(head.consensusSubmitMessage!.topicID, 'topicNum');
  const payerAccountId = entity(head.transactionID!.accountID, 'accountNum');
  const total = chunks.length;
  const initial = chunks[0].transactionId;
  for (const [i, c] of chunks.entries()) {
    const b = c.entries[0].body;
    const ci = b.consensusSubmitMessage!.chunkInfo;
    if (entity(b.consensusSubmitMessage!.topicID, 'topicNum') !== topicId) throw bad('the chunks name different topics');
    if (entity(b.transactionID!.accountID, 'accountNum') !== payerAccountId) throw bad('the chunks have different payers');
    if (total > 1 || ci) {
      if (!ci || num(ci.total) !== total || c.number !== i + 1 || txIdString(ci.initialTransactionID) !== initial) {
        throw bad(`chunk ${i + 1} of ${total} has inconsistent chunk info`, 'Send all chunks of one message, as the SDK freezes them (chunk_info total, number, initial transaction id)');
      }
    }
    if (c.message.length === 0) throw bad(`chunk ${i + 1} is empty`);
  }
  const validStartTs = head.transactionID!.transactionValidStart!;
  return {
    payerAccountId,
    topicId,
    transactionId: initial,
    validStart: new Date(num(validStartTs.seconds) * 1000 + Math.floor(num(validStartTs.nanos) / 1e6)),
    validDurationSeconds: num(head.transactionValidDuration?.seconds) || 120,
    maxFeeTinybars: BigInt(String(head.transactionFee ?? 0)),
    chunks,
    message: new Uint8Array(Buffer.concat(chunks.map((c) => Buffer.from(c.message)))),
  };
}

/**
 * The submission of one message given as its chunks, each the bytes splitChunks made (a TransactionList
 * of one chunk's node copies): decoded and checked as a whole, as decodeTopicSubmission does for the
 * client's bytes. The worker re-checks what it is handed with it before it submits anything.
 */
export function decodeSubmissionChunks(chunks: Uint8Array[]): DecodedSubmission {
  const transactionList: ProtoPkg.proto.ITransaction[] = [];
  for (const bytes of chunks) {
    let list: ProtoPkg.proto.ITransactionList;
    try {
      list = proto.TransactionList.decode(bytes);
    } catch {
      throw bad('a chunk is not a Hedera transaction list');
    }
    transactionList.push(...(list.transactionList ?? []));
  }
  if (transactionList.length === 0) throw bad('the message has no chunks');
  return decodeTopicSubmission(proto.TransactionList.encode({ transactionList }).finish());
}

function rawKey(key: PublicKey): Buffer {
  return Buffer.from(key.toBytesRaw());
}

function signatureOf(pair: ISignaturePair): Uint8Array | null {
  return pair.ed25519 ?? pair.ECDSASecp256k1 ?? null;
}

/**
 * Adds detached signatures (hex, one per chunk, in chunk order) made by `key` over each chunk's
 * body bytes. Only for chunks frozen for exactly one node (the SDK's addSignature has the same rule).
 */
export function addChunkSignatures(d: DecodedSubmission, key: PublicKey, signaturesHex: string[]): void {
  if (signaturesHex.length !== d.chunks.length) {
    throw bad(`${signaturesHex.length} signature(s) for ${d.chunks.length} chunk(s)`, 'Send one hex signature per chunk, in chunk order, or sign the transaction before toBytes()');
  }
  const ecdsa = /secp256k1|ecdsa/i.test(key.type);
  for (const [i, c] of d.chunks.entries()) {
    if (c.entries.length !== 1) throw bad('detached signatures need chunks frozen for exactly one node', 'Freeze with setNodeAccountIds([one node]) or sign before toBytes()');
    const hex = signaturesHex[i].replace(/^0x/i, '');
    if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length % 2 !== 0) throw bad(`signature ${i + 1} is not hex`);
    const sig = new Uint8Array(Buffer.from(hex, 'hex'));
    c.entries[0].sigPairs = [...c.entries[0].sigPairs, ecdsa ? { pubKeyPrefix: rawKey(key), ECDSASecp256k1: sig } : { pubKeyPrefix: rawKey(key), ed25519: sig }];
  }
}

/** Every copy of every chunk carries a signature by `key` that verifies over its body bytes. */
export function allChunksSignedBy(d: DecodedSubmission, key: PublicKey): boolean {
  const prefix = rawKey(key);
  return d.chunks.every((c) =>
    c.entries.every((e) =>
      e.sigPairs.some((p) => {
        const sig = signatureOf(p);
        const pp = Buffer.from(p.pubKeyPrefix ?? []);
        return sig !== null && pp.length > 0 && prefix.subarray(0, pp.length).equals(pp) && verifySignature(key, e.bodyBytes, sig);
      }),
    ),
  );
}

/** One TransactionList per chunk (all its node copies), each a complete single-chunk transaction for Transaction.fromBytes. */
export function splitChunks(d: DecodedSubmission): Uint8Array[] {
  return d.chunks.map((c) =>
    proto.TransactionList.encode({
      transactionList: c.entries.map((e) => ({
        signedTransactionBytes: proto.SignedTransaction.encode({ bodyBytes: e.bodyBytes, sigMap: { sigPair: e.sigPairs } }).finish(),
      })),
    }).finish(),
  );
}

export interface SubmissionExpectations {
  topicId: string;
  payerAccountId: string;
  /** the nodes this service submits to; every chunk must be frozen only for these */
  nodeAccountIds: string[];
  now: number;
  /** a valid start this far in the future is refused (default 10 s) */
  clockSkewMs?: number;
  /** the transaction must stay valid at least this long after now (default 15 s) */
  minRemainingMs?: number;
}

/** The decoded submission is a message to `topicId` paid by `payerAccountId`, for our nodes, still valid. */
export function checkTopicSubmission(d: DecodedSubmission, exp: SubmissionExpectations): void {
  if (d.topicId !== exp.topicId) throw bad(`the transaction submits to topic ${d.topicId}, not the a2a topic ${exp.topicId}`, `Use topic ${exp.topicId}`);
  if (d.payerAccountId !== exp.payerAccountId) {
    throw new TopicSubmissionError(403, `the transaction is paid by ${d.payerAccountId}, not by the sender ${exp.payerAccountId}`, 'Use TransactionId.generate(<sender account>)');
  }
  for (const c of d.chunks) {
    for (const e of c.entries) {
      if (!exp.nodeAccountIds.includes(e.nodeAccountId)) throw bad(`the transaction is frozen for node ${e.nodeAccountId}`, `Use setNodeAccountIds with node(s) ${exp.nodeAccountIds.join(', ')}`);
    }
  }
  const validUntil = d.validStart.getTime() + d.validDurationSeconds * 1000;
  if (d.validStart.getTime() > exp.now + (exp.clockSkewMs ?? 10_000)) throw bad('the transaction valid start is in the future');
  if (validUntil < exp.now + (exp.minRemainingMs ?? 15_000)) throw bad('the transaction has expired or is about to', 'Build and sign a new transaction (valid for 120 s from its valid start) and send it at once');
}

interface TopicMessageSpec {
  topicId: string;
  message: Uint8Array;
  payerAccountId: string;
  nodeAccountIds: string[];
  chunkSize: number;
}

/** The message's transaction, frozen without a client: an explicit transaction id (of the payer) and explicit nodes. */
function topicMessageTransaction(p: TopicMessageSpec): TopicMessageSubmitTransaction {
  const chunks = Math.max(1, Math.ceil(p.message.length / p.chunkSize));
  return new TopicMessageSubmitTransaction()
    .setTopicId(p.topicId)
    .setChunkSize(p.chunkSize)
    .setMaxChunks(chunks)
    .setMessage(p.message)
    .setNodeAccountIds(p.nodeAccountIds.map((n) => AccountId.fromString(n)))
    .setTransactionId(TransactionId.generate(AccountId.fromString(p.payerAccountId)))
    .freeze();
}

/**
 * Builds, freezes and signs a topic message in process (chunked at `chunkSize`): the payer's key
 * signs every chunk; nothing is submitted. The key is only used here, in memory.
 */
export async function signTopicMessage(p: TopicMessageSpec & { key: PrivateKey }): Promise<DecodedSubmission> {
  const tx = topicMessageTransaction(p);
  await signTransaction(tx, p.key);
  return decodeTopicSubmission(tx.toBytes());
}

/**
 * Builds and freezes a topic message without signing it (the deprecated /a2a/send: the API builds the
 * operator-paid message, which only the worker signs, issue 26 item 9).
 */
export function freezeTopicMessage(p: TopicMessageSpec): DecodedSubmission {
  return decodeTopicSubmission(topicMessageTransaction(p).toBytes());
}

/** The most an operator-paid message's chunk may offer as its fee: the SDK's default for a topic message (2 HBAR). */
export const OPERATOR_CHUNK_MAX_FEE_TINYBARS = 200_000_000n;

/**
 * The chunks of an operator-paid A2A message the worker is about to sign (issue 26 item 9), checked
 * as built by freezeTopicMessage: paid by the operator, to the a2a topic, for our nodes, no memo, a
 * fee offer within the SDK default, and no signature yet. Each passes as a CheckedTransaction the
 * operator pays for and signs. Whether the message was authorised is the caller's check (the API's
 * step authorisation, db/queries/stepAuthorisations.ts). Throws TopicSubmissionError.
 */
export function operatorPaidChunks(d: DecodedSubmission, exp: { operatorAccountId: string; topicId: string; nodeAccountIds: string[] }): CheckedTransaction[] {
  if (d.payerAccountId !== exp.operatorAccountId) throw new TopicSubmissionError(403, `the message is paid by ${d.payerAccountId}, not by the operator`);
  if (d.topicId !== exp.topicId) throw bad(`the message goes to topic ${d.topicId}, not the a2a topic`);
  for (const c of d.chunks) {
    for (const e of c.entries) {
      if (!exp.nodeAccountIds.includes(e.nodeAccountId)) throw bad(`chunk ${c.number} is frozen for node ${e.nodeAccountId}`);
      if (e.body.memo) throw bad(`chunk ${c.number} carries a memo`);
      if (BigInt(String(e.body.transactionFee ?? 0)) > OPERATOR_CHUNK_MAX_FEE_TINYBARS) throw bad(`chunk ${c.number} offers a fee over ${OPERATOR_CHUNK_MAX_FEE_TINYBARS} tinybars`);
      if (e.sigPairs.length > 0) throw bad(`chunk ${c.number} is already signed`);
    }
  }
  return splitChunks(d).map((bytes) => CheckedTransaction.passed(Transaction.fromBytes(bytes), { operatorPays: true, checker: 'a2a operator send' }));
}
