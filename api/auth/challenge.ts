/**
 * Challenge strings (DESIGN.md section 6): they name the service, the DID, a random nonce and the
 * expiry, live 300 s, and can be used once. The caller signs the exact UTF-8 string.
 */
import { randomBytes } from 'node:crypto';

export const CHALLENGE_TTL_MS = 300_000;
export const SERVICE_NAME = 'agent-passport';

export function newChallenge(did: string, now = Date.now()): { challenge: string; expiresAt: Date } {
  const expiresAt = new Date(now + CHALLENGE_TTL_MS);
  const nonce = randomBytes(16).toString('hex');
  return { challenge: `${SERVICE_NAME} wants you to sign in as ${did}\nnonce: ${nonce}\nexpires: ${expiresAt.toISOString()}`, expiresAt };
}
