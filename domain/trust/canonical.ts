/**
 * Canonical JSON (RFC 8785, JCS) and sha256 helpers of the trust snapshots (DESIGN.md section 10,
 * "Trust snapshots"). The serialisation is the maintained `canonicalize` package (pinned), never
 * JSON.stringify, so an independent verifier in any language gets the same bytes.
 */
import canonicalize from 'canonicalize';
import { sha256Hex } from '../hash.js';

export { sha256Hex };

/** RFC 8785 canonical JSON of a JSON value (throws on undefined, functions, non-finite numbers). */
export function canonicalJson(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new Error('value has no canonical JSON form');
  return text;
}

/** sha256 hex of the canonical JSON of a value. */
export function canonicalHash(value: unknown): string {
  return sha256Hex(canonicalJson(value));
}
