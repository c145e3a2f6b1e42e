/**
 * DID signature authentication (SPEC section 5, DESIGN.md section 6). A route adds
 * `preHandler: app.signedRequest((req) => req.body.posterDid)`; the guard checks, in order:
 * the three headers are present (auth_header_missing), the DID is a ledger DID of this network whose
 * account key the mirror knows (auth_did_unresolved; a mirror that cannot be reached is 503
 * service_unavailable), the signature over the challenge verifies (auth_signature_invalid), the
 * challenge is of the documented form (@agent-passport/core/signInChallenge, packages/core/src/signInChallenge.ts) and names this service's origin
 * when PUBLIC_BASE_URL gives it (auth_challenge_origin_mismatch; without it, development and tests,
 * the only origin to compare with would be the client's own Host header, so none is compared), the
 * challenge was issued for that DID and is unused and unexpired (auth_challenge_expired), and the
 * DID equals the one the request names (auth_did_mismatch, 403). On success
 * request.auth = { did, accountId, keyType }.
 *
 * `optional: true` (reads with more for a signer): a request with none of the headers passes as anonymous.
 *
 * Only a request whose signature verified consumes the challenge: a bad signature leaves it
 * usable. Consuming is one conditional UPDATE, so a challenge still serves exactly one request.
 *
 * `consume: false` checks an unused, unexpired challenge without using it up: a paid route's first,
 * unpaid call can only end in an error (402 or an earlier refusal), and the x402 client retries
 * the same request, with the same headers, carrying its payment; that retry consumes the challenge.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import fp from 'fastify-plugin';
import type { Sql } from 'postgres';
import { parseHederaDid } from '@agent-passport/core/did';
import { consumeChallenge, isChallengeUsable } from '../../db/queries/authChallenges.js';
import { originOf, parseChallenge } from '@agent-passport/core/signInChallenge';
import { keyTypeOf, verifySignature } from '@agent-passport/core/keys';
import type { AccountKeyResolver } from '../auth/accountKeys.js';
import { ApiError, echo } from '../errors.js';

export const DID_HEADER = 'x-service-did';
export const CHALLENGE_HEADER = 'x-service-challenge';
export const SIGNATURE_HEADER = 'x-service-signature';

export interface AuthenticatedAgent {
  did: string;
  accountId: string;
  keyType: 'ED25519' | 'ECDSA';
}

declare module 'fastify' {
  interface FastifyRequest {
    auth?: AuthenticatedAgent;
  }
  interface FastifyInstance {
    signedRequest(
      expectedDid?: (request: FastifyRequest) => string | undefined,
      opts?: SignedRequestOptions,
    ): (request: FastifyRequest) => Promise<void>;
  }
}

export interface SignedRequestOptions {
  /** Whether this request uses up its challenge (default always). */
  consume?: (request: FastifyRequest) => boolean;
  /**
   * A read that anyone may make and a signer may make with more rights (GET /market/tasks/{taskId}:
   * the parties see the result): a request without any of the three headers passes unauthenticated
   * (request.auth unset); one with any of them is checked in full, so a failed signature is a 401,
   * never a silent anonymous answer.
   */
  optional?: boolean;
}

function header(request: FastifyRequest, name: string): string | undefined {
  const v = request.headers[name];
  return Array.isArray(v) ? v[0] : v;
}

/** Challenges are one line of printable ASCII sent raw; the percent-encoded form is still accepted. */
function decodeChallenge(raw: string): string {
  if (!/%[0-9A-Fa-f]{2}/.test(raw)) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}

export default fp(async function signedRequestPlugin(app: FastifyInstance, opts: { sql: Sql; keys: AccountKeyResolver; network: string; publicBaseUrl?: string }) {
  /** the origin every challenge must name (PUBLIC_BASE_URL's), when configured */
  const origin = opts.publicBaseUrl ? originOf(opts.publicBaseUrl) : null;
  app.decorate('signedRequest', (expectedDid?: (request: FastifyRequest) => string | undefined, guardOpts: SignedRequestOptions = {}) => {
    return async (request: FastifyRequest) => {
      const did = header(request, DID_HEADER);
      const challengeRaw = header(request, CHALLENGE_HEADER);
      const signature = header(request, SIGNATURE_HEADER);
      if (guardOpts.optional && !did && !challengeRaw && !signature) return;
      const missing = [!did && 'X-Service-DID', !challengeRaw && 'X-Service-Challenge', !signature && 'X-Service-Signature'].filter(Boolean);
      if (missing.length) throw new ApiError('auth_header_missing', `Missing signature header: ${missing.join(', ')}`, { hint: 'Get a challenge from GET /auth/challenge?did=<your DID>, sign it, and send X-Service-DID, X-Service-Challenge and X-Service-Signature' });

      const tooLong = [did!.length > 128 && 'X-Service-DID', challengeRaw!.length > 512 && 'X-Service-Challenge', signature!.length > 512 && 'X-Service-Signature'].filter(Boolean);
      if (tooLong.length) throw new ApiError('invalid_request', `Signature header too long: ${tooLong.join(', ')}`, { hint: 'A DID is at most 128 characters, a challenge and a hex signature at most 512' });

      const parsed = parseHederaDid(did!);
      if (!parsed || parsed.network !== opts.network) {
        throw new ApiError('auth_did_unresolved', `DID ${echo(did)} cannot be resolved`, { hint: `Use did:hedera:${opts.network}:<accountId>` });
      }
      let key;
      try {
        key = await opts.keys.resolve(parsed.accountId);
      } catch (err) {
        request.log.warn({ err }, 'account key lookup failed');
        throw new ApiError('service_unavailable', 'The ledger mirror is unavailable, so the signature cannot be checked', { hint: 'Retry after 30 seconds with a fresh challenge if this one expires' });
      }
      if (!key) throw new ApiError('auth_did_unresolved', `DID ${did} cannot be resolved: no account with a single key`, { hint: 'The account must exist and have an ED25519 or ECDSA key' });

      const challenge = decodeChallenge(challengeRaw!);
      if (!verifySignature(key, challenge, signature!)) {
        throw new ApiError('auth_signature_invalid', 'Signature does not verify with the account key', { hint: 'Sign the exact UTF-8 challenge string with the account key and send the signature as hex' });
      }
      const issued = parseChallenge(challenge);
      if (!issued || issued.did !== did) {
        throw new ApiError('auth_challenge_expired', 'The challenge is not one this service issued for this DID', { hint: `Fetch a new challenge from GET /auth/challenge?did=${did}` });
      }
      if (origin && issued.origin !== origin) {
        throw new ApiError('auth_challenge_origin_mismatch', `The challenge was issued for ${issued.origin}, not for this service (${origin})`, {
          hint: `Sign only challenges that name the service you call: GET /auth/challenge?did=${did} on ${origin}`,
        });
      }
      const consume = guardOpts.consume?.(request) ?? true;
      const usable = consume ? await consumeChallenge(opts.sql, challenge, did!) : await isChallengeUsable(opts.sql, challenge, did!);
      if (!usable) {
        throw new ApiError('auth_challenge_expired', 'Challenge expired, already used, or not issued for this DID', { hint: `Fetch a new challenge from GET /auth/challenge?did=${did}` });
      }
      const expected = expectedDid?.(request);
      if (expected !== undefined && expected !== did) {
        throw new ApiError('auth_did_mismatch', `Signed in as ${did} but the request names ${echo(expected)}`, { hint: 'The DID in the body must be the signing DID' });
      }
      request.auth = { did: did!, accountId: parsed.accountId, keyType: keyTypeOf(key) };
    };
  });
});
