/**
 * Challenge strings (DESIGN.md section 6): they name the service, the DID, a random nonce and the
 * expiry, live 300 s, and can be used once. The caller signs the exact UTF-8 string.
 *
 * A challenge is one line of printable ASCII (no newline, no '%'), so it travels raw in the
 * X-Service-Challenge header: "agent-passport wants you to sign in as <did>; nonce <hex>;
 * expires <ISO time>". The DID has already been parsed as a ledger DID (ASCII only).
 */
import { randomBytes } from 'node:crypto';

export const CHALLENGE_TTL_MS = 300_000;
export const SERVICE_NAME = 'agent-passport';
/** What a challenge may contain: printable ASCII, space included. */
export const PRINTABLE_ASCII_LINE = /^[\x20-\x7e]+$/;

export function newChallenge(did: string, now = Date.now()): { challenge: string; expiresAt: Date } {
  const expiresAt = new Date(now + CHALLENGE_TTL_MS);
  const nonce = randomBytes(16).toString('hex');
  const challenge = `${SERVICE_NAME} wants you to sign in as ${did}; nonce ${nonce}; expires ${expiresAt.toISOString()}`;
  if (!PRINTABLE_ASCII_LINE.test(challenge)) throw new Error('challenge is not one line of printable ASCII');
  return { challenge, expiresAt };
}
