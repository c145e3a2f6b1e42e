/**
 * POST /admin/revoke (admin token): revokes a passport through the passportRevoke workflow
 * (wipe from the owner, passport.revoked audit message, projection). 404 when missing, 409
 * passport_already_revoked when already revoked or a revocation is running; 202 request_pending
 * when the workflow has not finished within the bounded wait.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { requireAdmin } from '../plugins/adminAuth.js';
import { errorResponses } from '../schemas/common.js';
import { revokeBodySchema, revokeResultSchema } from '../schemas/passports.js';
import { findPassport } from '../../db/queries/passports.js';
import { passportRevokeWorkflowId } from '../../workflows/passportIds.js';
import type { PassportRevokeInput, PassportRevokeResult } from '../../workflows/passportRevoke.js';
import { passportState, scopedWorkflowId } from '../passportState.js';
import { passportChanged } from '../passportCache.js';
import { notFound, parsePassportIds, passportLinks } from '../passportViews.js';
import { isPending, pendingReply, waitForResult } from '../workflowCalls.js';

const adminRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const state = passportState(ctx);

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
    async (request, reply) => {
      const ids = parsePassportIds(request.body.tokenId, request.body.serial);
      const passport = await findPassport(sql, ids.tokenId, ids.serial);
      if (!passport) throw notFound(ids.tokenId, ids.serial);
      const already = () =>
        new ApiError('passport_already_revoked', `Passport ${ids.tokenId}/${ids.serial} is already revoked`, {
          hint: passport.revoked_at ? `It was revoked at ${passport.revoked_at.toISOString()}` : 'A revocation is in progress',
        });
      if (passport.revoked_at) throw already();
      if (!ctx.temporal) throw new ApiError('service_unavailable', 'Workflows are not configured', { hint: 'Retry after 30 seconds' });
      let client;
      try {
        client = await ctx.temporal();
      } catch {
        throw new ApiError('service_unavailable', 'The workflow service is unavailable', { hint: 'Retry after 30 seconds' });
      }
      const workflowId = scopedWorkflowId(state, passportRevokeWorkflowId(ids.tokenId, ids.serial));
      const input: PassportRevokeInput = {
        tokenId: ids.tokenId,
        serial: ids.serial,
        accountId: passport.account_id,
        did: passport.did,
        ...(request.body.reason ? { reason: request.body.reason } : {}),
        ...(state.timings ? { timings: state.timings } : {}),
      };
      let handle;
      try {
        handle = await client.workflow.start('passportRevoke', { taskQueue: ctx.config.TEMPORAL_TASK_QUEUE, workflowId, args: [input] });
      } catch (err) {
        if (err instanceof WorkflowExecutionAlreadyStartedError) throw already();
        throw new ApiError('service_unavailable', 'The workflow could not be started', { hint: 'Retry after 30 seconds' });
      }
      const r = await waitForResult<PassportRevokeResult>(handle, state.workflowWaitMs);
      await passportChanged(sql, ids.tokenId, ids.serial);
      if (isPending(r)) return pendingReply(reply, workflowId, `/passport/${ids.tokenId}/${ids.serial}`);
      return {
        revoked: true as const,
        tokenId: r.tokenId,
        serialNumber: r.serialNumber,
        did: r.did,
        reason: r.reason,
        revokedAt: r.revokedAt,
        _links: { owner: passportLinks(r.tokenId, r.serialNumber, r.did, passport.account_id).owner, audit: { href: `/audit/${r.tokenId}/${r.serialNumber}` } },
      };
    },
  );
};

export default adminRoutes;
