// Scheduled transactions: create, sign, delete. Signatures are collected from the sigMaps of the
// create and sign transactions; the inner transaction runs as soon as its required keys have signed.
import { proto, Status } from '../proto.js';
import type { pb as P } from '../proto.js';
import { accountNum, scheduleNum, tsToNs, type Ns } from '../ids.js';
import { isValidKey, primitiveId, primitiveKeys, type Key } from '../signatures.js';
import {
  DEFAULT_SCHEDULE_LIFETIME_NS,
  MAX_SCHEDULE_LIFETIME_NS,
  type LedgerState,
  type Schedule,
} from '../state.js';
import { HandleError, fail, type ApplyCtx, type Handler } from './types.js';

export const isExpired = (s: Schedule, ns: Ns) => s.executedNs === null && s.deletedNs === null && s.expirationNs <= ns;
/**
 * Past its expiration the network purges a schedule whatever became of it (executed, deleted or
 * neither; hedera-services purgeExpiredSchedulesBetween): sign, delete and ScheduleGetInfo answer
 * INVALID_SCHEDULE_ID from then on (the mirror keeps its history).
 */
export const isPurged = (s: Schedule, ns: Ns) => s.expirationNs <= ns;

function liveSchedule(state: LedgerState, id: P.IScheduleID | null | undefined, ns: Ns): Schedule {
  const s = state.schedules.get(scheduleNum(id));
  // A schedule past its expiration is gone from state on the real network, hence INVALID_SCHEDULE_ID.
  if (!s || isPurged(s, ns)) return fail(Status.INVALID_SCHEDULE_ID);
  if (s.executedNs !== null) return fail(Status.SCHEDULE_ALREADY_EXECUTED);
  if (s.deletedNs !== null) return fail(Status.SCHEDULE_ALREADY_DELETED);
  return s;
}

/** Add every key that validly signed this transaction and matters to the schedule; returns how many were new. */
function collectSignatures(ctx: ApplyCtx, s: Schedule, body: Record<string, unknown>): number {
  if (!ctx.sigMap) return 0;
  let candidates: Key[] = [];
  try {
    candidates = ctx.requiredKeysOf(body, s.payer).flatMap((k) => primitiveKeys(k));
  } catch {
    candidates = [];
  }
  const ids = new Set<string>();
  for (const k of candidates) if (ctx.sigMap.signed(k)) ids.add(primitiveId(k)!);
  for (const id of ctx.sigMap.fullKeySigners()) ids.add(id);
  let added = 0;
  for (const id of ids) {
    if (s.signatories.has(id)) continue;
    s.signatories.add(id);
    added++;
    const pair = ctx.sigMap.pairFor(id);
    s.signatures.push({
      consensusNs: ctx.consensusNs,
      prefix: pair?.prefix ?? Buffer.from(id.slice(3), 'hex'),
      signature: pair?.signature ?? new Uint8Array(),
      type: id.startsWith('ed:') ? 'ED25519' : 'ECDSA_SECP256K1',
    });
  }
  return added;
}

export const scheduleCreate: Handler = {
  name: 'SCHEDULECREATE',
  precheck(b: P.IScheduleCreateTransactionBody) {
    if (!b.scheduledTransactionBody) return Status.INVALID_TRANSACTION;
    if (Buffer.byteLength(b.memo ?? '') > 100) return Status.MEMO_TOO_LONG;
    if (b.adminKey && !isValidKey(b.adminKey)) return Status.INVALID_ADMIN_KEY;
    return Status.OK;
  },
  requiredKeys(_state, b: P.IScheduleCreateTransactionBody) {
    return b.adminKey ? [b.adminKey as Key] : [];
  },
  apply(ctx, b: P.IScheduleCreateTransactionBody) {
    const { state } = ctx;
    const inner = b.scheduledTransactionBody as unknown as Record<string, unknown>;
    if (!ctx.isSchedulable(inner)) fail(Status.SCHEDULED_TRANSACTION_NOT_IN_WHITELIST);
    const payer = b.payerAccountID ? accountNum(b.payerAccountID) : ctx.payer;
    const payerAcct = state.accounts.get(payer);
    if (!payerAcct || payerAcct.deleted) fail(Status.INVALID_SCHEDULE_PAYER_ID);
    let expirationNs = ctx.consensusNs + DEFAULT_SCHEDULE_LIFETIME_NS;
    const explicit = !!b.expirationTime && tsToNs(b.expirationTime) > 0n;
    if (explicit) {
      expirationNs = tsToNs(b.expirationTime);
      if (expirationNs <= ctx.consensusNs) fail(Status.SCHEDULE_EXPIRATION_TIME_MUST_BE_HIGHER_THAN_CONSENSUS_TIME);
      if (expirationNs > ctx.consensusNs + MAX_SCHEDULE_LIFETIME_NS) fail(Status.SCHEDULE_EXPIRATION_TIME_TOO_FAR_IN_FUTURE);
    }
    // Identical = same body, memo, admin key, payer, expiration and wait flag, still pending.
    const identityKey = Buffer.from(
      proto.ScheduleCreateTransactionBody.encode({ ...b, payerAccountID: b.payerAccountID ?? null }).finish(),
    ).toString('hex');
    for (const s of state.schedules.values()) {
      if (s.identityKey === identityKey && s.executedNs === null && s.deletedNs === null && !isExpired(s, ctx.consensusNs))
        throw new HandleError(Status.IDENTICAL_SCHEDULE_ALREADY_CREATED, {
          scheduleId: s.num,
          scheduledTxId: s.scheduledTxId,
        });
    }
    try {
      ctx.requiredKeysOf(inner, payer);
    } catch (e) {
      if (e instanceof HandleError) fail(Status.UNRESOLVABLE_REQUIRED_SIGNERS);
      throw e;
    }
    const n = state.allocEntity();
    const s: Schedule = {
      num: n,
      creator: ctx.payer,
      payer,
      adminKey: b.adminKey ? (b.adminKey as Key) : null,
      memo: b.memo ?? '',
      bodyBytes: proto.SchedulableTransactionBody.encode(b.scheduledTransactionBody!).finish(),
      identityKey,
      createdNs: ctx.consensusNs,
      expirationNs,
      explicitExpiration: explicit,
      waitForExpiry: b.waitForExpiry ?? false,
      executedNs: null,
      deletedNs: null,
      signatories: new Set(),
      signatures: [],
      scheduledTxId: { ...ctx.txId, scheduled: true },
    };
    state.schedules.set(n, s);
    collectSignatures(ctx, s, inner);
    ctx.rec.scheduleId = n;
    ctx.rec.scheduledTxId = s.scheduledTxId;
    ctx.rec.entityId = n;
    ctx.trySchedule(s);
  },
};

export const scheduleSign: Handler = {
  name: 'SCHEDULESIGN',
  requiredKeys: () => [],
  apply(ctx, b: P.IScheduleSignTransactionBody) {
    const s = liveSchedule(ctx.state, b.scheduleID, ctx.consensusNs);
    const inner = proto.SchedulableTransactionBody.decode(s.bodyBytes) as unknown as Record<string, unknown>;
    const added = collectSignatures(ctx, s, inner);
    if (added === 0) fail(Status.NO_NEW_VALID_SIGNATURES);
    ctx.rec.scheduledTxId = s.scheduledTxId;
    ctx.rec.entityId = s.num;
    ctx.trySchedule(s);
  },
};

export const scheduleDelete: Handler = {
  name: 'SCHEDULEDELETE',
  requiredKeys(state, b: P.IScheduleDeleteTransactionBody) {
    const s = state.schedules.get(scheduleNum(b.scheduleID));
    if (!s) fail(Status.INVALID_SCHEDULE_ID);
    if (!s!.adminKey) fail(Status.SCHEDULE_IS_IMMUTABLE);
    return [s!.adminKey!];
  },
  apply(ctx, b: P.IScheduleDeleteTransactionBody) {
    const s = liveSchedule(ctx.state, b.scheduleID, ctx.consensusNs);
    if (!s.adminKey) fail(Status.SCHEDULE_IS_IMMUTABLE);
    s.deletedNs = ctx.consensusNs;
    ctx.rec.entityId = s.num;
  },
};
