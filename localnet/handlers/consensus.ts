// HCS: topics and messages, with chunk info and the version 3 running hash.
import { createHash } from 'node:crypto';
import { Status, big } from '../proto.js';
import type { pb as P } from '../proto.js';
import { accountNum, topicNum, txIdFromProto, txKey, type Ns } from '../ids.js';
import { isValidKey, type Key } from '../signatures.js';
import { AUTO_RENEW_PERIOD, type LedgerState, type Topic } from '../state.js';
import { fail, type Handler } from './types.js';

export const RUNNING_HASH_VERSION = 3n;

function topic(state: LedgerState, id: P.ITopicID | null | undefined): Topic {
  const t = state.topics.get(topicNum(id));
  if (!t || t.deleted) return fail(Status.INVALID_TOPIC_ID);
  return t;
}

/**
 * Running hash v3: sha384 over the previous hash, the version, payer and topic ids, the consensus
 * time, the sequence number and sha384 of the message (as the Hedera services node computes it).
 */
export function nextRunningHash(prev: Uint8Array, payer: number, topicN: number, ns: Ns, seq: bigint, msg: Uint8Array) {
  const b = Buffer.alloc(8 * 9 + 4);
  let o = 0;
  const w64 = (v: bigint) => {
    b.writeBigInt64BE(v, o);
    o += 8;
  };
  w64(RUNNING_HASH_VERSION);
  for (const v of [0n, 0n, BigInt(payer), 0n, 0n, BigInt(topicN)]) w64(v); // shard, realm, num of payer and topic
  w64(ns / 1_000_000_000n);
  b.writeInt32BE(Number(ns % 1_000_000_000n), o);
  o += 4;
  w64(seq);
  const msgHash = createHash('sha384').update(msg).digest();
  return new Uint8Array(createHash('sha384').update(prev).update(b).update(msgHash).digest());
}

export const topicCreate: Handler = {
  name: 'CONSENSUSCREATETOPIC',
  precheck(b: P.IConsensusCreateTopicTransactionBody) {
    if (Buffer.byteLength(b.memo ?? '') > 100) return Status.MEMO_TOO_LONG;
    if (b.adminKey && !isValidKey(b.adminKey)) return Status.BAD_ENCODING;
    if (b.submitKey && !isValidKey(b.submitKey)) return Status.BAD_ENCODING;
    if ((b.customFees ?? []).length) return Status.NOT_SUPPORTED;
    return Status.OK;
  },
  requiredKeys(state, b: P.IConsensusCreateTopicTransactionBody) {
    const keys: Key[] = [];
    if (b.adminKey) keys.push(b.adminKey as Key);
    if (b.autoRenewAccount) {
      const a = state.accounts.get(accountNum(b.autoRenewAccount));
      if (!a || a.deleted) fail(Status.INVALID_AUTORENEW_ACCOUNT);
      keys.push(a!.key);
    }
    return keys;
  },
  apply(ctx, b: P.IConsensusCreateTopicTransactionBody) {
    const n = ctx.state.allocEntity();
    const period = big(b.autoRenewPeriod?.seconds) || AUTO_RENEW_PERIOD;
    ctx.state.topics.set(n, {
      num: n,
      memo: b.memo ?? '',
      adminKey: b.adminKey ? (b.adminKey as Key) : null,
      submitKey: b.submitKey ? (b.submitKey as Key) : null,
      autoRenewAccount: b.autoRenewAccount ? accountNum(b.autoRenewAccount) : null,
      seq: 0n,
      runningHash: new Uint8Array(48),
      createdNs: ctx.consensusNs,
      expiryNs: ctx.consensusNs + period * 1_000_000_000n,
      deleted: false,
      messages: [],
    });
    ctx.rec.topicId = n;
    ctx.rec.entityId = n;
  },
};

export const topicSubmit: Handler = {
  name: 'CONSENSUSSUBMITMESSAGE',
  precheck(b: P.IConsensusSubmitMessageTransactionBody) {
    if (!b.message || b.message.length === 0) return Status.INVALID_TOPIC_MESSAGE;
    if (b.message.length > 1024) return Status.MESSAGE_SIZE_TOO_LARGE;
    const ci = b.chunkInfo;
    if (ci) {
      if ((ci.number ?? 0) < 1 || (ci.number ?? 0) > (ci.total ?? 0)) return Status.INVALID_CHUNK_NUMBER;
      if (!txIdFromProto(ci.initialTransactionID)) return Status.INVALID_CHUNK_TRANSACTION_ID;
    }
    return Status.OK;
  },
  requiredKeys(state, b: P.IConsensusSubmitMessageTransactionBody) {
    const t = topic(state, b.topicID);
    return t.submitKey ? [t.submitKey] : [];
  },
  apply(ctx, b: P.IConsensusSubmitMessageTransactionBody) {
    const t = topic(ctx.state, b.topicID);
    let chunk = null;
    if (b.chunkInfo) {
      const initial = txIdFromProto(b.chunkInfo.initialTransactionID)!;
      // The first chunk must carry its own transaction id as the initial one.
      if (b.chunkInfo.number === 1 && txKey(initial) !== txKey({ ...ctx.txId, scheduled: initial.scheduled }))
        fail(Status.INVALID_CHUNK_TRANSACTION_ID);
      if (b.chunkInfo.number === 1 && initial.payer !== ctx.txId.payer) fail(Status.INVALID_CHUNK_TRANSACTION_ID);
      chunk = { initialTxId: initial, number: b.chunkInfo.number ?? 1, total: b.chunkInfo.total ?? 1 };
    }
    const message = new Uint8Array(b.message ?? []);
    const seq = t.seq + 1n;
    const hash = nextRunningHash(t.runningHash, ctx.payer, t.num, ctx.consensusNs, seq, message);
    t.seq = seq;
    t.runningHash = hash;
    t.messages.push({ topic: t.num, seq, consensusNs: ctx.consensusNs, message, runningHash: hash, payer: ctx.payer, chunk });
    ctx.rec.topicSeq = seq;
    ctx.rec.topicRunningHash = hash;
    ctx.rec.entityId = t.num;
  },
};
