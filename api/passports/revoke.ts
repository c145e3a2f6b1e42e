/**
 * Revoking a passport (POST /admin/revoke; SPEC 4.1): the passportRevoke workflow wipes the NFT from
 * its owner, writes passport.revoked to the audit topic and updates the projection. 404 when the
 * passport does not exist, 409 passport_already_revoked when it is revoked or a revocation is
 * running (the workflow id is per passport: a second start is refused), pending when the workflow
 * outlasts the bounded wait.
 */
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/client';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { scopedWorkflowId, type WorkflowSettings } from '../workflowSettings.js';
import { waitForResult, WorkflowPending } from '../workflowCalls.js';
import { passportChanged } from './cache.js';
import { notFound } from './views.js';
import { findPassport } from '../../db/queries/passports.js';
import { startWorkflow } from '../../temporal/workflows.js';
import { passportRevokeContract, passportRevokeWorkflowId, type PassportRevokeInput, type PassportRevokeResult } from '../../workflows/contracts/passportRevoke.js';

export type RevokeOutcome = { owner: string; revoked: PassportRevokeResult };

export async function revokePassport(ctx: AppContext, settings: WorkflowSettings, r: { tokenId: string; serial: number; reason?: string }): Promise<RevokeOutcome> {
  const sql = ctx.sql!;
  const passport = await findPassport(sql, r.tokenId, r.serial);
  if (!passport) throw notFound(r.tokenId, r.serial);
  const already = () =>
    new ApiError('passport_already_revoked', `Passport ${r.tokenId}/${r.serial} is already revoked`, {
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
  const workflowId = scopedWorkflowId(settings, passportRevokeWorkflowId(r.tokenId, r.serial));
  const input: PassportRevokeInput = {
    tokenId: r.tokenId,
    serial: r.serial,
    accountId: passport.account_id,
    did: passport.did,
    ...(r.reason ? { reason: r.reason } : {}),
    ...(settings.timings ? { timings: settings.timings } : {}),
  };
  let handle;
  try {
    handle = await startWorkflow(client, passportRevokeContract, input, { taskQueue: ctx.config.TEMPORAL_TASK_QUEUE, workflowId });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) throw already();
    throw new ApiError('service_unavailable', 'The workflow could not be started', { hint: 'Retry after 30 seconds' });
  }
  let result: PassportRevokeResult;
  try {
    result = await waitForResult(handle, settings.workflowWaitMs, `/passport/${r.tokenId}/${r.serial}`);
  } catch (err) {
    if (err instanceof WorkflowPending) await passportChanged(sql, r.tokenId, r.serial);
    throw err;
  }
  await passportChanged(sql, r.tokenId, r.serial);
  return { owner: passport.account_id, revoked: result };
}
