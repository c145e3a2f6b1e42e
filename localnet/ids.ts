// Entity ids, timestamps and transaction ids: conversions between protobuf, strings and bigint nanos.
import { L, big, num } from './proto.js';
import type { pb as P } from './proto.js';

export type Ns = bigint; // nanoseconds since the Unix epoch

export const ent = (n: number): string => `0.0.${n}`;

/** Parse "0.0.N" or "N"; null when malformed or outside shard/realm 0. */
export function parseEntity(s: string): number | null {
  const m = /^(?:0\.0\.)?(\d{1,18})$/.exec(s.trim());
  return m ? Number(m[1]) : null;
}

type ProtoEntity = { shardNum?: unknown; realmNum?: unknown } | null | undefined;

/** Entity number of a protobuf id; -1 when absent or not in shard/realm 0. */
export function entityNum(id: ProtoEntity, field: string): number {
  if (!id) return -1;
  if (big(id.shardNum) !== 0n || big(id.realmNum) !== 0n) return -1;
  const v = (id as Record<string, unknown>)[field];
  if (v === null || v === undefined) return -1;
  return num(v);
}

export const accountNum = (id: P.IAccountID | null | undefined): number => entityNum(id, 'accountNum');
export const tokenNum = (id: P.ITokenID | null | undefined): number => entityNum(id, 'tokenNum');
export const topicNum = (id: P.ITopicID | null | undefined): number => entityNum(id, 'topicNum');
export const scheduleNum = (id: P.IScheduleID | null | undefined): number => entityNum(id, 'scheduleNum');

export const accountId = (n: number) => ({ shardNum: L(0), realmNum: L(0), accountNum: L(n) });
export const tokenId = (n: number) => ({ shardNum: L(0), realmNum: L(0), tokenNum: L(n) });
export const topicId = (n: number) => ({ shardNum: L(0), realmNum: L(0), topicNum: L(n) });
export const scheduleId = (n: number) => ({ shardNum: L(0), realmNum: L(0), scheduleNum: L(n) });

export function tsToNs(ts: P.ITimestamp | null | undefined): Ns {
  if (!ts) return 0n;
  return big(ts.seconds) * 1_000_000_000n + BigInt(ts.nanos ?? 0);
}

export function nsToTs(ns: Ns) {
  return { seconds: L(ns / 1_000_000_000n), nanos: Number(ns % 1_000_000_000n) };
}

/** Mirror node timestamp form "seconds.nnnnnnnnn". */
export function nsToMirror(ns: Ns): string {
  return `${ns / 1_000_000_000n}.${(ns % 1_000_000_000n).toString().padStart(9, '0')}`;
}

/** Parse a mirror timestamp ("1700000000", "1700000000.5", "1700000000.000000001"). */
export function mirrorToNs(s: string): Ns | null {
  const m = /^(\d{1,12})(?:\.(\d{1,9}))?$/.exec(s);
  if (!m) return null;
  return BigInt(m[1]) * 1_000_000_000n + BigInt((m[2] ?? '').padEnd(9, '0') || '0');
}

export const nowNs = (): Ns => BigInt(Date.now()) * 1_000_000n;

export interface TxId {
  payer: number;
  validStartNs: Ns;
  nonce: number;
  scheduled: boolean;
}

export function txIdFromProto(id: P.ITransactionID | null | undefined): TxId | null {
  if (!id || !id.accountID || !id.transactionValidStart) return null;
  const payer = accountNum(id.accountID);
  if (payer < 0) return null;
  return {
    payer,
    validStartNs: tsToNs(id.transactionValidStart),
    nonce: id.nonce ?? 0,
    scheduled: id.scheduled ?? false,
  };
}

export function txIdToProto(t: TxId) {
  return {
    accountID: accountId(t.payer),
    transactionValidStart: nsToTs(t.validStartNs),
    scheduled: t.scheduled,
    nonce: t.nonce,
  };
}

/** Unique key of a transaction id: payer, valid start, nonce and scheduled flag. */
export function txKey(t: TxId): string {
  return `${t.payer}@${t.validStartNs}/${t.nonce}${t.scheduled ? '/s' : ''}`;
}

/** Mirror node transaction id form: 0.0.2-1700000000-000000000. */
export function txIdMirror(t: TxId): string {
  const s = t.validStartNs / 1_000_000_000n;
  const n = (t.validStartNs % 1_000_000_000n).toString().padStart(9, '0');
  return `${ent(t.payer)}-${s}-${n}`;
}

/** Parse the mirror form (or the SDK form 0.0.2@1700000000.000000000); scheduled/nonce come separately. */
export function parseTxIdString(s: string): { payer: number; validStartNs: Ns } | null {
  let m = /^0\.0\.(\d+)-(\d+)-(\d+)$/.exec(s);
  if (!m) m = /^0\.0\.(\d+)@(\d+)\.(\d+)$/.exec(s);
  if (!m) return null;
  return { payer: Number(m[1]), validStartNs: BigInt(m[2]) * 1_000_000_000n + BigInt(m[3].padEnd(9, '0').slice(0, 9)) };
}

export function longZeroEvmAddress(n: number): string {
  return '0x' + n.toString(16).padStart(40, '0');
}
