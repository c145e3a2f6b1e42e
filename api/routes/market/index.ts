/**
 * The marketplace route group (SPEC 4.4a): one plugin per file of this folder, all sharing
 * ./shared.ts (the task book, runTaskUpdate, passport and key checks, the task response).
 *   tasks.ts    posting, reads, claim, deliver, cancel, increase-reward, complete (with escrow), escrow-status
 *   payment.ts, verify.ts, sign.ts (part 2): prepare-payment, complete without escrow (marketState(ctx).directPayment),
 *               verify, /market/sign; registered below when they exist
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
