/**
 * POST /market/tasks/{taskId}/prepare-payment (SPEC 4.4a; DESIGN.md 8): HTTP only. The frozen,
 * unsigned transfer of a delivered task without escrow, built by api/market/payment.ts (which also
 * checks the signed transfer a complete request brings). DID signature headers (posterDid).
 */
import { bodyDid } from '../../auth/bodyDid.js';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { errorResponses } from '../../schemas/common.js';
import { preparePaymentBodySchema, preparePaymentResultSchema } from '../../schemas/marketPayments.js';
import { taskIdParams } from '../../schemas/market.js';
import { PAYMENT_RECIPE } from '../../../domain/market.js';
import { preparePayment } from '../../market/payment.js';

const paymentRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app) => {
  const market = app.market;

  app.post(
    '/market/tasks/:taskId/prepare-payment',
    {
      schema: {
        tags: ['market'],
        summary: 'The frozen payment transfer of a delivered task without escrow, to sign offline',
        description:
          'DID signature headers are required and the signed DID must be posterDid. Answers base64 txBytes of a frozen, unsigned ' +
          'CryptoTransfer paid by the poster: poster -price, claimer +(price - fee), treasury +fee, memo "task {taskId} payment", for one node, ' +
          'valid 120 s, with its txId and the resolved account ids and amounts. Nothing is signed or submitted. ' +
          PAYMENT_RECIPE +
          ' 400 when the task is not delivered, has no claimer or is paid from escrow.',
        params: taskIdParams,
        body: preparePaymentBodySchema,
        response: { 200: preparePaymentResultSchema, ...errorResponses(400, 401, 403, 404, 500, 503) },
      },
      preHandler: app.signedRequest(bodyDid('posterDid')),
    },
    async (request) => preparePayment(market, request.params.taskId, request.body.posterDid),
  );
};

export default paymentRoutes;
