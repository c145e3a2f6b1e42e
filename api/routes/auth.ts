/**
 * GET /auth/challenge?did=...: a single-use challenge to sign for DID signature authentication
 * (one line of printable ASCII, sent back raw in X-Service-Challenge). Also sweeps expired ones.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Sql } from 'postgres';
import { parseHederaDid } from '../../domain/did.js';
import { deleteExpiredChallenges, insertChallenge } from '../../db/queries/authChallenges.js';
import { newChallenge } from '../auth/challenge.js';
import { ApiError } from '../errors.js';
import { didString, errorResponses } from '../schemas/common.js';

export interface AuthRoutesOptions {
  sql: Sql;
  network: string;
  /** How often expired challenges are deleted (a timer per API instance, unref'd). */
  sweepEveryMs: number;
}

const authRoutes: FastifyPluginAsyncZod<AuthRoutesOptions> = async (app, { sql, network, sweepEveryMs }) => {
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
        querystring: z.object({ did: didString }),
        response: { 200: z.object({ challenge: z.string(), expiresAt: z.string() }), ...errorResponses(400) },
      },
    },
    async (request) => {
      const parsed = parseHederaDid(request.query.did);
      if (!parsed || parsed.network !== network) {
        throw new ApiError('invalid_request', 'did is not a ledger DID of this network', { hint: `did: expected did:hedera:${network}:<shard.realm.num>` });
      }
      const { challenge, expiresAt } = newChallenge(parsed.did);
      await insertChallenge(sql, { challenge, did: parsed.did, expiresAt });
      return { challenge, expiresAt: expiresAt.toISOString() };
    },
  );
};

export default authRoutes;
