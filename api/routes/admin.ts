/**
 * POST /admin/revoke (admin token): revokes a passport through the passportRevoke workflow
 * (api/passports/revoke.ts: wipe from the owner, passport.revoked audit message, projection). 404
 * when missing, 409 passport_already_revoked when already revoked or a revocation is running; 202
 * request_pending when the workflow has not finished within the bounded wait.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { requireAdmin } from '../plugins/adminAuth.js';
import { errorResponses } from '../schemas/common.js';
import { revokeBodySchema, revokeResultSchema } from '../schemas/passports.js';
import { parsePassportIds, passportLinks } from '../passports/views.js';
import { revokePassport } from '../passports/revoke.js';

const adminRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  app.post(
    '/admin/revoke',
    {
      onRequest: requireAdmin(ctx.config.ADMIN_TOKEN_SHA256),
      schema: {
        tags: ['admin'],
        summary: 'Revoke a passport: wipe the NFT and write passport.revoked to the audit topic (admin token)',
        body: revokeBodySchema,
        response: { 200: revokeResultSchema, ...errorResponses(202, 400, 401, 403, 404, 409, 500, 502, 503) },
      },
    },
    async (request) => {
      const ids = parsePassportIds(request.body.tokenId, request.body.serial);
      const outcome = await revokePassport(ctx, app.workflowSettings, { ...ids, ...(request.body.reason ? { reason: request.body.reason } : {}) });
      const r = outcome.revoked;
      return {
        revoked: true as const,
        tokenId: r.tokenId,
        serialNumber: r.serialNumber,
        did: r.did,
        reason: r.reason,
        revokedAt: r.revokedAt,
        _links: { owner: passportLinks(r.tokenId, r.serialNumber, r.did, outcome.owner).owner, audit: { href: `/audit/${r.tokenId}/${r.serialNumber}` } },
      };
    },
  );
};

export default adminRoutes;
