/**
 * POST /market/tasks/{taskId}/verify (SPEC 4.4a; DESIGN.md 6 "Verification"): runs the verifier the
 * poster configured (none | sha256 | json_schema | http) on a delivered task through the task
 * workflow's verify Update, which counts the attempt and writes task.verified to the marketplace
 * topic. Answers { taskId, passed, reasons, verificationAttempts, verifierType }. It never completes
 * the task or moves money. Open like the task reads (SPEC 5 names no signature for it); 400 when the
 * task is not delivered, 404 when there is no such task.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { errorResponses } from '../../schemas/common.js';
import { taskIdParams } from '../../schemas/market.js';
import { verifyBodySchema, verifyResultSchema } from '../../schemas/marketPayments.js';
import { verifyUpdate } from '../../../workflows/taskTypes.js';
import { loadTask, marketState, pendingTask, refuseEarly, runTaskUpdate, TaskPending } from './shared.js';

const verifyRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const state = marketState(ctx);

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
        params: taskIdParams,
        body: verifyBodySchema,
        response: { 200: verifyResultSchema, ...errorResponses(202, 400, 404, 500, 502, 503) },
      },
    },
    async (request, reply) => {
      const task = await loadTask(state, request.params.taskId);
      refuseEarly('verify', task);
      try {
        const result = await runTaskUpdate(ctx, task, verifyUpdate, { callerDid: request.body?.callerDid });
        return {
          taskId: task.taskId,
          passed: result.passed,
          reasons: result.reasons,
          verificationAttempts: result.verificationAttempts,
          verifierType: result.task.verifierType,
          status: result.task.status,
        };
      } catch (err) {
        if (err instanceof TaskPending) return pendingTask(reply, task.taskId);
        throw err;
      }
    },
  );
};

export default verifyRoutes;
