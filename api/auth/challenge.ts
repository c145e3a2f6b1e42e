/**
 * Challenge strings (DESIGN.md sections 6 and 11): issued by GET /auth/challenge for a DID, valid
 * 300 s, usable once. Their text is defined once, in packages/core/src/signInChallenge.ts (@agent-passport/core): one line of printable
 * ASCII naming the service's public origin (PUBLIC_BASE_URL; without it, the request's own origin,
 * development and tests only), the purpose, the DID, a random nonce and the expiry. The caller signs
 * the exact UTF-8 string; it travels raw in the X-Service-Challenge header.
 */
import { randomBytes } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { CHALLENGE_TTL_MS, formatChallenge, originOf } from '@agent-passport/core/signInChallenge';

export { CHALLENGE_TTL_MS, PRINTABLE_ASCII_LINE } from '@agent-passport/core/signInChallenge';

export function newChallenge(did: string, origin: string, now = Date.now()): { challenge: string; expiresAt: Date } {
  const expiresAt = new Date(now + CHALLENGE_TTL_MS);
  const nonce = randomBytes(16).toString('hex');
  return { challenge: formatChallenge({ origin, did, nonce, expiresAt }), expiresAt };
}

/**
 * The origin challenges name and signatures must be for: PUBLIC_BASE_URL's (required in production),
 * else the origin this request was sent to (null when its Host is not a valid host).
 */
export function serviceOrigin(publicBaseUrl: string | undefined, request: FastifyRequest): string | null {
  if (publicBaseUrl) return originOf(publicBaseUrl);
  return originOf(`${request.protocol}://${request.host}`);
}
