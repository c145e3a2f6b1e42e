/**
 * GET /audit/{tokenId}/{serial}?limit=&offset=: the audit events of one passport (SPEC 2 "Audit
 * event", 6.2) in topic order, paginated (limit default 20, max 100), read from the PostgreSQL
 * projection of the audit topic (db/migrations/0005_audit_events.ts), not from the topic.
 *
 * The projection is written by the publishing activity right after consensus and completed by the
 * catch-up reader (api/passports/auditProjection.ts, which also says when a page waits for it).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { errorResponses } from '../schemas/common.js';
import { auditQuerySchema, auditResponseSchema, passportPathParams } from '../schemas/passports.js';
import { parsePassportIds } from '../passports/views.js';
import { auditPages } from '../passports/auditProjection.js';

const auditRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const ledger = ctx.ledger!;
  const pages = auditPages(app, ctx.sql!, ledger.mirror, ledger.deployment.topics.audit);

  app.get(
    '/audit/:tokenId/:serial',
    {
      schema: {
        tags: ['audit'],
        summary: 'Audit events of a passport (passport.issued, passport.upgraded, passport.revoked, ...), in topic order, paginated',
        params: passportPathParams,
        querystring: auditQuerySchema,
        response: { 200: auditResponseSchema, ...errorResponses(400, 500, 503) },
      },
    },
    async (request) => {
      const ids = parsePassportIds(request.params.tokenId, request.params.serial);
      const { limit, offset } = request.query;
      const page = await pages.page({ tokenId: ids.tokenId, serial: ids.serial, limit, offset });
      return { events: page.events, total: page.total, limit, offset };
    },
  );
};

export default auditRoutes;
