// The HAPI protobuf classes, taken from the proto package that @hashgraph/sdk bundles, so the bytes
// we decode and encode are exactly the ones the SDK produces and expects.
import { createRequire } from 'node:module';
// Type-only: the package is nested inside the SDK and not resolvable by name from here.
import type * as ProtoPkg from '../node_modules/@hashgraph/sdk/node_modules/@hiero-ledger/proto/lib/index.js';

const here = createRequire(import.meta.url);
// Resolve from the SDK's own location so we load the very copy it uses (nested or hoisted).
const sdkRequire = createRequire(here.resolve('@hashgraph/sdk'));
const pkg = sdkRequire('@hiero-ledger/proto') as typeof ProtoPkg;
const protoRequire = createRequire(sdkRequire.resolve('@hiero-ledger/proto'));

export const proto = pkg.proto;
export type { ProtoPkg };
// Type namespace of the messages: `import type { pb } from './proto.js'` then `pb.ITransactionBody`.
export type { proto as pb } from '../node_modules/@hashgraph/sdk/node_modules/@hiero-ledger/proto/lib/index.js';
export type LongT = ProtoPkg.proto.Timestamp['seconds'];
export const Status = pkg.proto.ResponseCodeEnum;
export type StatusCode = ProtoPkg.proto.ResponseCodeEnum;

const LongCtor = protoRequire('long') as {
  fromString(s: string, unsigned?: boolean): LongT;
  isLong(v: unknown): boolean;
};

/** int64 value for an outgoing message (protobufjs accepts Long). */
export function L(v: bigint | number): LongT {
  return LongCtor.fromString(v.toString());
}

/** Any protobuf int64 representation (Long, number, string, null) to bigint. */
export function big(v: unknown): bigint {
  if (v === null || v === undefined) return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return BigInt(Math.trunc(v));
  if (typeof v === 'string') return BigInt(v);
  return BigInt((v as { toString(): string }).toString());
}

export function num(v: unknown): number {
  return Number(big(v));
}

export function statusName(code: number): string {
  return (Status as unknown as Record<number, string>)[code] ?? String(code);
}
