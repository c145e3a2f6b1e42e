/** GET /auth/challenge?did=...: a single-use challenge to sign for DID signature authentication. */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { Sql } from 'postgres';
import { parseHederaDid } from '../../domain/did.js';
import { insertChallenge } from '../../db/queries/authChallenges.js';
import { newChallenge } from '../auth/challenge.js';
import { ApiError } from '../errors.js';
import { errorResponses } from '../schemas/common.js';

const authRoutes: FastifyPluginAsyncZod<{ sql: Sql; network: string }> = async (app, { sql, network }) => {
  app.get(
    '/auth/challenge',
    {
      schema: {
        tags: ['auth'],
        summary: 'Challenge to sign for DID signature authentication (valid 300 s, single use)',
        querystring: z.object({ did: z.string().min(1) }),
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
