/** Catalogs and metadata: GET /catalog, /api/meta/errors, /api/meta/fees, /api/meta/trust-tiers. */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { TIER_CATALOG } from '../../domain/tiers.js';
import { SPEC_ERRORS, SERVICE_ERRORS } from '../../domain/errors.js';
import { buildFeeCatalog } from '../../domain/fees.js';
import { TRUST_LADDER } from '../../domain/trustLadder.js';
import type { AppContext } from '../context.js';
import { catalogResponseSchema, errorCatalogSchema, feeCatalogSchema, trustTiersSchema } from '../schemas/meta.js';
import { sendJson, serializerFor } from '../serializer.js';

const metaRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const tiers = TIER_CATALOG.map((t) => ({ ...t, capabilities: [...t.capabilities] }));
  const errors = { total_count: SPEC_ERRORS.length, count: SPEC_ERRORS.length, errors: SPEC_ERRORS, service_errors: SERVICE_ERRORS };
  const fees = buildFeeCatalog({ network: ctx.config.HEDERA_NETWORK, marketFeeBps: ctx.config.MARKET_FEE_BPS });
  const ladder = { total_count: TRUST_LADDER.length, tiers: TRUST_LADDER };

  // Static for the life of the process: serialised once, sent as is.
  const catalogBody = serializerFor(catalogResponseSchema)(tiers);
  app.get('/catalog', { schema: { tags: ['meta'], summary: 'Passport tiers with prices (HBAR) and capabilities', response: { 200: catalogResponseSchema } } }, async (_req, reply) => sendJson(reply, catalogBody));
  app.get('/api/meta/errors', { schema: { tags: ['meta'], summary: 'Error catalog', response: { 200: errorCatalogSchema } } }, async () => errors as never);
  const feesBody = serializerFor(feeCatalogSchema)(fees);
  app.get('/api/meta/fees', { schema: { tags: ['meta'], summary: 'Fee catalog', response: { 200: feeCatalogSchema } } }, async (_req, reply) => sendJson(reply, feesBody));
  const ladderBody = serializerFor(trustTiersSchema)(ladder);
  app.get('/api/meta/trust-tiers', { schema: { tags: ['meta'], summary: 'Trust tier ladder', response: { 200: trustTiersSchema } } }, async (_req, reply) => sendJson(reply, ladderBody));
};

export default metaRoutes;
