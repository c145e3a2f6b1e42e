/**
 * The Idempotency-Key request header of the task-posting routes (IETF draft "The Idempotency-Key
 * HTTP Header Field"; issue 13): its syntax, its lifetime, and the fingerprint of the request it was
 * first used with. Pure.
 */
import { canonicalJson } from './trust/canonical.js';
import { sha256Hex } from './hash.js';

export const IDEMPOTENCY_KEY_HEADER = 'idempotency-key';
/** 1-64 characters of [A-Za-z0-9._:-] (a UUID fits). */
export const IDEMPOTENCY_KEY_PATTERN = /^[A-Za-z0-9._:-]{1,64}$/;
/** A key stands for its task this long; afterwards it may be used again for a new task. */
export const IDEMPOTENCY_KEY_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * sha256 (hex) of the route and the canonical JSON (RFC 8785) of the request body without its
 * private key fields: the same logical post gives the same hash, a different body (or the other
 * posting route) another. Keys are dropped by name, so they never reach the hash.
 */
export function postFingerprint(route: string, body: Record<string, unknown>): string {
  const rest = Object.fromEntries(Object.entries(body).filter(([k, v]) => !/privatekey/i.test(k) && v !== undefined));
  return sha256Hex(canonicalJson({ route, body: rest }));
}
