/**
 * Discovery documents under /.well-known/ (SPEC 4.7). Each document is one entry of WELL_KNOWN:
 * its path, summary and a builder run once at start-up; add an entry to publish another.
 *
 * /.well-known/http-message-signatures-directory: the key that signs trust snapshots as a JWKS
 * (kid = integrity.key_id). Media type: SPEC section 2 says application/json; the HTTP message
 * signatures directory draft registers application/http-message-signatures-directory+json. Both
 * are served: the draft's type when the request's Accept names it, application/json otherwise.
 */
import type { FastifyInstance } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { exportJWK } from 'jose';
import { z } from 'zod';
import type { AppContext } from '../context.js';

/** The signature directory: the trust snapshot key, which also signs the service's A2A card (routes/discovery.ts). */
export const SIGNATURE_DIRECTORY_PATH = '/.well-known/http-message-signatures-directory';

export const SIGNATURES_DIRECTORY_MEDIA_TYPE = 'application/http-message-signatures-directory+json';

export const jwksSchema = z
  .object({ keys: z.array(z.object({ kty: z.string(), crv: z.string(), x: z.string(), kid: z.string(), alg: z.string(), use: z.string() })) })
  .meta({ id: 'SignatureDirectory' });

interface WellKnownDocument {
  path: string;
  summary: string;
  /** media types offered, the default first; a later one is chosen when Accept names it */
  mediaTypes: string[];
  build(app: FastifyInstance): Promise<unknown>;
}

const WELL_KNOWN: WellKnownDocument[] = [
  {
    path: SIGNATURE_DIRECTORY_PATH,
    summary: 'Key directory (JWKS) of the trust snapshot signing key',
    mediaTypes: ['application/json', SIGNATURES_DIRECTORY_MEDIA_TYPE],
    async build(app) {
      const signer = app.trustSnapshots.signer; // the key the app's snapshots are signed with
      const jwk = await exportJWK(signer.publicKey);
      return { keys: [{ kty: jwk.kty!, crv: jwk.crv!, x: jwk.x!, kid: signer.keyId, alg: 'EdDSA', use: 'sig' }] };
    },
  },
];

/** The offered media type the Accept header names explicitly, else the default (the first). */
function negotiate(accept: string | undefined, offered: string[]): string {
  const named = (accept ?? '').split(',').map((part) => part.split(';')[0]!.trim().toLowerCase());
  return offered.slice(1).find((type) => named.includes(type)) ?? offered[0]!;
}

const wellKnownRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app) => {
  for (const doc of WELL_KNOWN) {
    const body = JSON.stringify(await doc.build(app));
    app.get(doc.path, { schema: { tags: ['discovery'], summary: doc.summary } }, async (req, reply) =>
      reply.header('vary', 'accept').type(`${negotiate(req.headers.accept, doc.mediaTypes)}; charset=utf-8`).send(body),
    );
  }
};

export default wellKnownRoutes;
