/**
 * GET /.well-known/x402.json: how to pay this service over x402 (facilitator url, network, scheme
 * exact, asset HBAR, payTo, the facilitator's fee payer, and the paid resources with their prices).
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { TIER_CATALOG, tierPriceTinybars } from '../../domain/tiers.js';
import { EXACT_SCHEME, HBAR_ASSET, x402NetworkId } from '@agent-passport/core/x402/network';

const x402InfoRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const deployment = ctx.ledger!.deployment;
  app.get(
    '/.well-known/x402.json',
    { schema: { tags: ['discovery'], summary: 'x402 payment discovery: facilitator, network, scheme, asset, payTo, fee payer, priced resources' } },
    async () => {
      let feePayer: string | null = null;
      if (app.hasDecorator('x402')) feePayer = await app.x402.feePayer().catch(() => null);
      return {
        x402Version: 2,
        url: deployment.facilitatorUrl ?? null,
        facilitator: { url: deployment.facilitatorUrl ?? null, feePayer },
        network: x402NetworkId(deployment.network),
        ledgerNetwork: deployment.network,
        scheme: EXACT_SCHEME,
        asset: 'HBAR',
        assetId: HBAR_ASSET,
        payTo: deployment.payTo,
        feePayer,
        headers: { required: 'PAYMENT-REQUIRED', payment: 'PAYMENT-SIGNATURE', response: 'PAYMENT-RESPONSE' },
        resources: [
          {
            resource: '/passport/request',
            method: 'POST',
            description: 'Agent passport NFT; the price depends on the tier in the body',
            prices: TIER_CATALOG.map((t) => ({ tier: t.name, amount: t.price, amountTinybars: tierPriceTinybars(t.name).toString() })),
          },
          {
            resource: '/passport/{tokenId}/{serial}/upgrade',
            method: 'POST',
            description: "In-place upgrade; the price is the difference between the new and the current tier's prices",
          },
        ],
      };
    },
  );
};

export default x402InfoRoutes;
