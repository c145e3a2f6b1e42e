/**
 * POST /market/tasks/{taskId}/verify (SPEC 4.4a; DESIGN.md 6 "Verification"): runs the verifier the
 * poster configured (none | sha256 | json_schema | http) on a delivered task through the task
 * workflow's verify Update, which counts the attempt and writes task.verified to the marketplace
 * topic. Answers { taskId, passed, reasons, verificationAttempts, verifierType }. It never completes
 * the task or moves money. Open like the task reads (SPEC 5 names no signature for it); 400 when the
 * task is not delivered, 404 when there is no such task.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { AppContext } from '../../context.js';
import { ApiError, echo } from '../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { isCatalogCode } from '../../../domain/errors.js';
import { isTaskId, refusalOf, VERIFIER_TYPES, type TaskRecord, type TaskRefusal } from '../../../domain/market.js';
import { findTask } from '../../../db/queries/tasks.js';
import { TASK_REFUSAL_TYPE, taskWorkflowId, verifyUpdate, type VerifyResult } from '../../../workflows/taskTypes.js';

const paramsSchema = z.object({ taskId: z.string().min(1).max(64) });
const bodySchema = z.object({ callerDid: z.string().max(128).optional().describe('informational: who asks') }).strict().optional();
export const verifyResultSchema = z
  .object({
    taskId: z.string(),
    passed: z.boolean(),
    reasons: z.array(z.string()).describe('why it did not pass (empty when it passed)'),
    verificationAttempts: z.number().int().describe('verifications run on this task so far, this one included'),
    verifierType: z.enum(VERIFIER_TYPES),
    status: z.string().describe('the task status, unchanged (delivered)'),
  })
  .meta({ id: 'MarketVerifyResult' });

/** The TaskRefusal carried by a failed Update (validator or handler), as the API error it stands for. */
export function refusalError(err: unknown): ApiError | null {
  const cause = err instanceof WorkflowUpdateFailedError ? err.cause : err;
  if (!(cause instanceof ApplicationFailure) || cause.type !== TASK_REFUSAL_TYPE) return null;
  const r = cause.details?.[0] as TaskRefusal | undefined;
  if (!r || !isCatalogCode(r.code)) return new ApiError('invalid_request', cause.message);
  return new ApiError(r.code, r.message, { status: r.status, hint: r.hint });
}

export interface VerifyRoutesOptions {
  ctx: AppContext;
  getTask?: (taskId: string) => Promise<TaskRecord | null>;
}

const verifyRoutes: FastifyPluginAsyncZod<VerifyRoutesOptions> = async (app, opts) => {
  const { ctx } = opts;
  const getTask = opts.getTask ?? (async (taskId: string) => (await findTask(ctx.sql!, taskId))?.record ?? null);

  async function temporal(): Promise<Client> {
    if (!ctx.temporal) throw new ApiError('service_unavailable', 'Workflows are not configured', { hint: 'Retry after 30 seconds' });
    try {
      return await ctx.temporal();
    } catch {
      throw new ApiError('service_unavailable', 'The workflow service is unavailable', { hint: 'Retry after 30 seconds' });
    }
  }

  app.post(
    '/market/tasks/:taskId/verify',
    {
      schema: {
        tags: ['market'],
        summary: 'Run the verifier of a delivered task',
        description:
          "Runs the poster's verifier on the delivered result: none passes; sha256 compares the result's sha256 with the expected one; " +
          'json_schema validates resultBody; http POSTs { taskId, attempt, resultBody, resultIpfs, resultSha256 } to the poster URL ' +
          '(public addresses only) and reads { passed, reasons }. Counts attempts; never completes the task or pays. 400 when not delivered.',
        params: paramsSchema,
        body: bodySchema,
        response: { 200: verifyResultSchema, ...errorResponses(400, 404, 500, 503) },
      },
    },
    async (request) => {
      const { taskId } = request.params;
      const task = isTaskId(taskId) ? await getTask(taskId) : null;
      if (!task) throw new ApiError('market_task_not_found', `Task ${echo(taskId)} does not exist`, { hint: 'Check taskId (GET /market/tasks)' });
      const early = refusalOf('verify', task);
      if (early) throw new ApiError(isCatalogCode(early.code) ? early.code : 'invalid_request', early.message, { status: early.status, hint: early.hint });
      const client = await temporal();
      let result: VerifyResult;
      try {
        result = await client.workflow.getHandle(taskWorkflowId(taskId)).executeUpdate(verifyUpdate, { args: [{ callerDid: request.body?.callerDid }] });
      } catch (err) {
        const refused = refusalError(err);
        if (refused) throw refused;
        if (err instanceof WorkflowNotFoundError) throw new ApiError('market_task_not_found', `Task ${taskId} has no running lifecycle`, { hint: 'Only a delivered task can be verified' });
        throw new ApiError('service_unavailable', 'The verification could not be run', { hint: 'Retry after 30 seconds' });
      }
      return {
        taskId,
        passed: result.passed,
        reasons: result.reasons,
        verificationAttempts: result.verificationAttempts,
        verifierType: result.task.verifierType,
        status: result.task.status,
      };
    },
  );
};

export default verifyRoutes;
