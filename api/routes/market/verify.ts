/**
 * POST /market/tasks/{taskId}/verify (SPEC 4.4a; DESIGN.md 6 "Verification"; HTTP only, the step is
 * api/market/steps.ts verifyTask): runs the verifier the
 * poster configured (none | sha256 | json_schema | http) on a delivered task. It never completes the
 * task or moves money. Open like the task reads (SPEC 5 names no signature for it); 400 when the
 * task is not delivered, 404 when there is no such task.
 *
 * Anonymous, so it must cost the operator next to nothing (issue 20 item 4): a delivery's outcome is
 * kept in the task (task.verification) and answered again from this process's memory, with no
 * workflow call, no ledger write and no fetch. Only the first verify of a delivery (or one after an
 * inconclusive outcome, at most MARKET_VERIFY_RUNS_MAX runs, MARKET_VERIFY_RETRY_S apart) reaches the
 * task workflow's verify Update, which runs the verifier outside the step mutex (the parties' steps
 * never wait for it) and writes task.verified to the topic only when the outcome changed.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { errorResponses } from '../../schemas/common.js';
import { taskIdParams } from '../../schemas/market.js';
import { verifyBodySchema, verifyResultSchema } from '../../schemas/marketPayments.js';
import { verifyTask } from '../../market/steps.js';
import { verifyView } from '../../market/views.js';

const verifyRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app) => {
  const market = app.market;

  app.post(
    '/market/tasks/:taskId/verify',
    {
      schema: {
        tags: ['market'],
        summary: 'Run the verifier of a delivered task',
        description:
          "Runs the poster's verifier on the delivered result: none passes; sha256 compares the result's sha256 with the expected one; " +
          'json_schema validates resultBody; http POSTs { taskId, attempt, resultBody, resultIpfs, resultSha256 } to the poster URL ' +
          '(public addresses only) and reads { passed, reasons }. The outcome of a delivery is kept and answered again (reused: true, verifiedAt) without ' +
          'running the verifier; an inconclusive outcome (the verifier gave no verdict) may run again, at most MARKET_VERIFY_RUNS_MAX times, ' +
          'MARKET_VERIFY_RETRY_S apart. verificationAttempts counts verifier runs. Never completes the task or pays. 400 when not delivered.',
        params: taskIdParams,
        body: verifyBodySchema,
        response: { 200: verifyResultSchema, ...errorResponses(202, 400, 404, 500, 502, 503) },
      },
    },
    async (request) => verifyView(await verifyTask(market, request.params.taskId, request.body?.callerDid)),
  );
};

export default verifyRoutes;
