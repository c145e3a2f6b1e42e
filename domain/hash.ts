/**
 * The one sha256 helper of the code base (hashing is pure, so it lives in domain/): trust snapshot
 * hashes, task result hashes, admin token digests, payment ids.
 */
import { createHash } from 'node:crypto';

/** Lower-case hex sha256 of bytes or of a UTF-8 string. */
export function sha256Hex(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('hex');
}

/** Unpadded base64url sha256 of bytes or of a UTF-8 string (ownership challenge digests). */
export function sha256Base64url(data: Uint8Array | string): string {
  return createHash('sha256').update(data).digest('base64url');
}
