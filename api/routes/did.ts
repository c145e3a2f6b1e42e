/**
 * GET /did/{did}: the W3C DID document of a ledger DID backed by an active passport (SPEC 2, 3):
 * the account key read from the mirror as the verification method (Ed25519VerificationKey2020 or
 * EcdsaSecp256k1VerificationKey2019), authentication and assertionMethod, and services for the
 * agent endpoint, its A2A card (with cardVerified and cardVerification, from the directory) and the passport. 400 when the DID is not did:hedera:{network}:{accountId}; 404
 * when no active passport backs it. Served from memory (api/passports/didDocuments.ts).
 *
 * Representations (W3C DID 1.0 section 6; issue 29 item 4), chosen by Accept: application/did+json
 * (the default: no Accept, any wildcard, or a type not offered) without @context;
 * application/did+ld+json with @context; application/json, when asked for by name, the JSON-LD body
 * under the plain JSON type (what this route served before).
 */
import { z } from 'zod';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBase, type AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import { parseHederaDid } from '@agent-passport/core/did';
import { usePassportCache } from '../passports/cache.js';
import { didDocuments } from '../passports/didDocuments.js';
import { serializerFor } from '../serializer.js';
import { preferredMediaType } from '../mediaTypes.js';

export const DID_JSON = 'application/did+json';
export const DID_LD_JSON = 'application/did+ld+json';
/** offered in this order: the first is the default */
const DID_MEDIA_TYPES = [DID_JSON, DID_LD_JSON, 'application/json'] as const;

const didDocumentSchema = z
  .object({
    '@context': z.array(z.string()).optional().describe('application/did+ld+json and application/json only (a JSON-LD entry)'),
    id: z.string(),
    controller: z.string(),
    verificationMethod: z.array(z.object({ id: z.string(), type: z.string(), controller: z.string(), publicKeyMultibase: z.string() })),
    authentication: z.array(z.string()),
    assertionMethod: z.array(z.string()),
    service: z.array(
      z.object({
        id: z.string(),
        type: z.string(),
        serviceEndpoint: z.string(),
        cardVerified: z.boolean().optional().describe("A2AAgentCard service: the card carries a signature (A2A v1.0 section 8.4) by this DID's key"),
        cardVerification: z.string().optional().describe('A2AAgentCard service: why it is or is not verified (as the directory entry says)'),
      }),
    ),
  })
  .loose()
  .meta({ id: 'DidDocument' });

const didRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const network = ctx.ledger!.deployment.network;
  // the directory (installed after this plugin) names the agent's A2A card and its verification
  const agentOf = (did: string) => (app.hasDecorator('agentDirectory') ? app.agentDirectory.get(did) : undefined);
  const documents = didDocuments(ctx, usePassportCache(app, ctx.sql!), serializerFor(didDocumentSchema), agentOf);

  app.get(
    '/did/:did',
    {
      schema: {
        tags: ['dids'],
        summary: 'Resolve a ledger DID to its W3C DID document (404 when no active passport backs it)',
        params: z.object({ did: z.string().max(128) }),
        response: {
          200: { description: 'The DID document', content: { [DID_JSON]: { schema: didDocumentSchema }, [DID_LD_JSON]: { schema: didDocumentSchema }, 'application/json': { schema: didDocumentSchema } } },
          ...errorResponses(400, 404, 500, 503),
        },
      },
    },
    async (request, reply) => {
      const did = request.params.did; // fastify already decoded the path parameter
      const parsed = parseHederaDid(did);
      if (!parsed) throw new ApiError('invalid_request', `${echo(did)} is not a valid DID`, { hint: `did: expected did:hedera:${network}:<shard.realm.num>` });
      const representations = await documents.documentOf(did, parsed, publicBase(ctx, request));
      const type = preferredMediaType(request.headers.accept, DID_MEDIA_TYPES);
      // a pre-serialised body (api/serializer.ts sendJson): fastify sends a string of a JSON type as is
      return (reply as FastifyReply)
        .header('vary', 'accept')
        .header('content-type', `${type}; charset=utf-8`)
        .send(type === DID_JSON ? representations.json : representations.jsonLd);
    },
  );
};

export default didRoutes;
