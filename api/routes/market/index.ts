/**
 * The marketplace route group (SPEC 4.4a): one plugin per file of this folder, HTTP only; the
 * marketplace itself (state, orchestration, views) is api/market/, reached as `app.market`.
 *   tasks.ts    posting, reads, claim, deliver, cancel, increase-reward, complete, escrow-status
 *   payment.ts  prepare-payment (the transfer of a task without escrow)
 *   verify.ts   verify
 *   sign.ts     /market/sign
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import marketTaskRoutes from './tasks.js';
import marketPaymentRoutes from './payment.js';
import marketVerifyRoutes from './verify.js';
import marketSignRoutes from './sign.js';

const marketRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  await app.register(marketTaskRoutes, { ctx });
  await app.register(marketPaymentRoutes, { ctx });
  await app.register(marketVerifyRoutes, { ctx });
  await app.register(marketSignRoutes, { ctx });
};

export default marketRoutes;
