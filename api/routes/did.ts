/**
 * GET /did/{did}: the W3C DID document of a ledger DID backed by an active passport (SPEC 2, 3):
 * the account key read from the mirror as the verification method (Ed25519VerificationKey2020 or
 * EcdsaSecp256k1VerificationKey2019), authentication and assertionMethod, and services for the
 * agent endpoint and the passport. Served from PostgreSQL and an in-memory cache (30 s; this API
 * process drops an entry as soon as it upgrades or revokes that passport).
 * 400 when the DID is not did:hedera:{network}:{accountId}; 404 when no active passport backs it.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import { buildDidDocument } from '../../domain/didDocument.js';
import { parseHederaDid } from '../../domain/did.js';
import { keyTypeOf } from '../../ledger/keys.js';
import { findActivePassportByAccount } from '../../db/queries/passports.js';
import { passportState } from '../passportState.js';
import { publicBase } from '../passportViews.js';

const didDocumentSchema = z
  .object({
    '@context': z.array(z.string()),
    id: z.string(),
    controller: z.string(),
    verificationMethod: z.array(z.object({ id: z.string(), type: z.string(), controller: z.string(), publicKeyMultibase: z.string() })),
    authentication: z.array(z.string()),
    assertionMethod: z.array(z.string()),
    service: z.array(z.object({ id: z.string(), type: z.string(), serviceEndpoint: z.string() })),
  })
  .loose()
  .meta({ id: 'DidDocument' });

const didRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;
  const state = passportState(ctx);

  app.get(
    '/did/:did',
    {
      schema: {
        tags: ['dids'],
        summary: 'Resolve a ledger DID to its W3C DID document (404 when no active passport backs it)',
        params: z.object({ did: z.string().max(128) }),
        response: { 200: didDocumentSchema, ...errorResponses(400, 404, 500, 503) },
      },
    },
    async (request) => {
      const did = request.params.did; // fastify already decoded the path parameter
      const parsed = parseHederaDid(did);
      if (!parsed) throw new ApiError('invalid_request', `${echo(did)} is not a valid DID`, { hint: `did: expected did:hedera:${network}:<shard.realm.num>` });
      const hit = state.didCache.get(did);
      if (hit && hit.until > Date.now()) return hit.body as z.infer<typeof didDocumentSchema>;
      const missing = () => new ApiError('passport_not_found', `No active passport backs ${did}`, { hint: 'Request a passport with POST /passport/request' });
      if (parsed.network !== network) throw missing();
      const passport = await findActivePassportByAccount(sql, network, parsed.accountId);
      if (!passport) throw missing();
      let key;
      try {
        key = await ledger.keys.resolve(parsed.accountId);
      } catch {
        throw new ApiError('service_unavailable', 'The ledger mirror is unavailable', { hint: 'Retry after 30 seconds' });
      }
      if (!key) throw missing();
      const serial = Number(passport.serial);
      const doc = buildDidDocument({
        did,
        keyType: keyTypeOf(key),
        publicKeyRaw: key.toBytesRaw(),
        passportUrl: `${publicBase(ctx, request)}/passport/${passport.token_id}/${serial}`,
        endpoint: passport.endpoint ?? undefined,
        tokenId: passport.token_id,
        serialNumber: serial,
        tier: passport.tier,
      });
      state.didCache.set(did, { body: doc, until: Date.now() + state.didCacheTtlMs });
      if (state.didCache.size > 10_000) state.didCache.delete(state.didCache.keys().next().value!);
      return doc;
    },
  );
};

export default didRoutes;
