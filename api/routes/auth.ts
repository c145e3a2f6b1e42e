/**
 * GET /auth/challenge?did=...: a single-use challenge to sign for DID signature authentication
 * (one line of printable ASCII of the form packages/core/src/signInChallenge.ts defines, naming this service's
 * origin; sent back raw in X-Service-Challenge). Also sweeps expired ones.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Sql } from 'postgres';
import { parseHederaDid } from '@agent-passport/core/did';
import { deleteExpiredChallenges, insertChallenge } from '../../db/queries/authChallenges.js';
import { newChallenge, serviceOrigin } from '../auth/challenge.js';
import { CHALLENGE_FORM, CHALLENGE_TTL_MS } from '@agent-passport/core/signInChallenge';
import { ApiError } from '../errors.js';
import { didString, errorResponses } from '../schemas/common.js';

export interface AuthRoutesOptions {
  sql: Sql;
  network: string;
  /** How often expired challenges are deleted (a timer per API instance, unref'd). */
  sweepEveryMs: number;
  /** PUBLIC_BASE_URL: its origin is the one challenges name */
  publicBaseUrl?: string;
}

export const CHALLENGE_DESCRIPTION = [
  `Answers { challenge, expiresAt }. The challenge is one line of printable ASCII (0x20-0x7E), at most 512 characters, of exactly this form:`,
  '',
  `    ${CHALLENGE_FORM}`,
  '',
  'for example `For https://passport.example only; purpose agent-passport sign-in; did did:hedera:testnet:0.0.1234; nonce 9f86d081884c7d659a2feaa0c55ad015; expires 2030-01-01T00:05:00.000Z`.',
  "<origin> is this service's public origin (scheme://host[:port] of PUBLIC_BASE_URL, as URL.origin writes it); <did> is the did asked for; " +
    `the challenge is valid ${CHALLENGE_TTL_MS / 1000} s and serves one request. Sign its exact bytes with the account key (ED25519, or ECDSA secp256k1 over keccak256) ` +
    'and send X-Service-DID, X-Service-Challenge (the text as is) and X-Service-Signature (hex). A signature over a challenge for another origin is refused (401 auth_challenge_origin_mismatch).',
  'Clients must refuse to sign any text that is not of this form, names another DID, names an origin other than the one they called, or has expired: ' +
    'a text of another form may be something else entirely (a transaction body), and a challenge for another origin is a relay of your sign-in to that service.',
].join('\n');

const authRoutes: FastifyPluginAsyncZod<AuthRoutesOptions> = async (app, { sql, network, sweepEveryMs, publicBaseUrl }) => {
  // Expired challenges are deleted on a schedule. Every instance sweeps; the DELETEs are idempotent.
  let sweeper: NodeJS.Timeout | undefined;
  app.addHook('onReady', async () => {
    sweeper = setInterval(() => {
      deleteExpiredChallenges(sql, new Date()).catch((err) => app.log.warn({ err }, 'expired challenge sweep failed'));
    }, sweepEveryMs);
    sweeper.unref();
  });
  app.addHook('onClose', async () => clearInterval(sweeper));

  app.get(
    '/auth/challenge',
    {
      schema: {
        tags: ['auth'],
        summary: 'Challenge to sign for DID signature authentication (valid 300 s, single use)',
        description: CHALLENGE_DESCRIPTION,
        querystring: z.object({ did: didString }),
        response: { 200: z.object({ challenge: z.string(), expiresAt: z.string() }), ...errorResponses(400) },
      },
    },
    async (request) => {
      const parsed = parseHederaDid(request.query.did);
      if (!parsed || parsed.network !== network) {
        throw new ApiError('invalid_request', 'did is not a ledger DID of this network', { hint: `did: expected did:hedera:${network}:<shard.realm.num>` });
      }
      const origin = serviceOrigin(publicBaseUrl, request);
      if (!origin) throw new ApiError('invalid_request', 'The Host header does not name a valid host', { hint: 'Send the request to the service by its host name' });
      const { challenge, expiresAt } = newChallenge(parsed.did, origin);
      await insertChallenge(sql, { challenge, did: parsed.did, expiresAt });
      return { challenge, expiresAt: expiresAt.toISOString() };
    },
  );
};

export default authRoutes;
