/**
 * Passports (SPEC 2, 3, 4.1; DESIGN.md sections 5 and 6), HTTP only:
 *   POST /passport/request                      signed request + x402 -> passportIssuance workflow
 *   GET  /passport/address/{address}            passports of an owner account (active first)
 *   GET  /passport/{tokenId}/{serial}           one active passport (404 missing or revoked)
 *   GET  /passports?tokenId=|env=               paginated list (one of tokenId, env required)
 *   POST /passport/{tokenId}/{serial}/upgrade   signed request + x402 for the price difference -> passportUpgrade
 *
 * Paid routes run, in order: DID signature (the unpaid first call only verifies it, without
 * consuming the challenge, so the x402 client can retry the same request with its payment), the
 * request's own checks (tier, capabilities, ownership), then the paid-request saga of
 * api/passports/paidRequest.ts: the refusals that must come before money moves, the x402 gate that
 * VERIFIES the payment (no money moves in the API), the payment recorded with the request's claim,
 * and the workflow that settles it and issues (or upgrades), waited for at most WORKFLOW_WAIT_MS
 * (then 202 request_pending with a Location to poll).
 */
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { publicBase, type AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { WORKFLOW_WAIT_MS } from '../workflowSettings.js';
import { notFound, parsePassportIds, passportJson } from '../passports/views.js';
import { cacheReady, pageOfPassports, passportsOfAccount, usePassportCache } from '../passports/cache.js';
import { sendJson, serializerFor } from '../serializer.js';
import { errorResponses } from '../schemas/common.js';
import {
  addressPassportsSchema,
  passportIssuanceResultSchema,
  passportListSchema,
  passportPathParams,
  passportRequestBodySchema,
  passportSchema,
  passportsQuerySchema,
  upgradeBodySchema,
  upgradeResultSchema,
} from '../schemas/passports.js';
import { requireVerifiedPayment } from '../plugins/x402.js';
import { paidPassportRequests, paymentSignatureOf, type IssuancePlan, type UpgradePlan } from '../passports/paidRequest.js';
import { CAPABILITIES, isCapability } from '../../domain/capabilities.js';
import { HEDERA_NETWORKS, isAccountId, isEntityId, parseHederaDid } from '@agent-passport/core/did';
import { capabilitiesOutsideTier, isTier, tierEntry, tierPriceTinybars, TIERS } from '../../domain/tiers.js';
import { findPassport, type PassportRow } from '../../db/queries/passports.js';

const passportRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;
  const tokenId = ledger.deployment.passportTokenId;
  const issuancePlans = new WeakMap<FastifyRequest, IssuancePlan>();
  const upgradePlans = new WeakMap<FastifyRequest, UpgradePlan>();
  const paymentsEnabled = app.hasDecorator('x402');
  const paid = paidPassportRequests(ctx, app.workflowSettings);

  const authenticate = async (request: FastifyRequest, did: string | undefined) => {
    // The unpaid first call only checks the challenge; the paid retry uses it up.
    await app.signedRequest(() => did, { consume: (r) => paymentSignatureOf(r) !== null })(request);
  };

  // ---------------------------------------------------------------- issuance

  if (paymentsEnabled) {
    const payIssuance = requireVerifiedPayment((request) => {
      const plan = issuancePlans.get(request)!;
      return { amountTinybars: tierPriceTinybars(plan.tier), payTo: ledger.deployment.payTo, description: `Agent passport, ${plan.tier} tier` };
    });

    app.post(
      '/passport/request',
      {
        schema: {
          tags: ['passports'],
          summary: 'Buy a passport NFT: DID signature headers + x402 payment of the tier price (HBAR)',
          description:
            'Without PAYMENT-SIGNATURE the answer is 402 with PAYMENT-REQUIRED (the signature headers are checked but the challenge is not used up, so the same request can be retried with the payment). ' +
            'The payment is verified here and settled by the issuance workflow. ' +
            `If issuance takes longer than ${WORKFLOW_WAIT_MS / 1000} s the answer is 202 request_pending with a Location to poll (GET /passport/address/{accountId}).`,
          body: passportRequestBodySchema,
          response: { 200: passportIssuanceResultSchema, ...errorResponses(202, 400, 401, 402, 403, 409, 500, 502, 503) },
        },
        preHandler: async function (request, reply) {
          const body = request.body;
          await authenticate(request, body.did);
          const auth = request.auth!;
          if (!isTier(body.tier)) throw new ApiError('passport_tier_invalid', `Unknown tier ${echo(body.tier)}`, { hint: `Use one of ${TIERS.join(', ')} (GET /catalog)` });
          const tier = body.tier;
          const requested = body.capabilities ?? tierEntry(tier).capabilities;
          const unknown = requested.filter((c) => !isCapability(c));
          if (unknown.length) throw new ApiError('invalid_request', `Unknown capabilities: ${unknown.join(', ')}`, { hint: `capabilities: use values from ${CAPABILITIES.join(', ')}` });
          const outside = capabilitiesOutsideTier(tier, requested);
          if (outside.length) {
            throw new ApiError('invalid_request', `Capabilities ${outside.join(', ')} are not part of the ${tier} tier`, { hint: `capabilities: the ${tier} tier offers ${tierEntry(tier).capabilities.join(', ')}` });
          }
          const capabilities = CAPABILITIES.filter((c) => requested.includes(c));
          const plan: IssuancePlan = { tier, capabilities, ...(body.endpoint ? { endpoint: body.endpoint } : {}) };
          issuancePlans.set(request, plan);
          if ((await paid.prepareIssuance(request, auth, plan)) === 'pay') await payIssuance.call(app, request, reply);
        },
      },
      async (request, reply) => paid.issue(request, reply, request.auth!, issuancePlans.get(request)!),
    );
  }

  // ---------------------------------------------------------------- reads
  // Served from the memory cache kept current by NOTIFY (api/passports/cache.ts); bodies are
  // serialised once per passport version and sent as they are.

  const cache = usePassportCache(app, sql);
  const serializePassport = serializerFor(passportSchema);
  const serializeAddress = serializerFor(addressPassportsSchema);
  const passportBodies = new Map<string, { row: PassportRow; base: string; body: string }>();
  const addressBodies = new Map<string, { version: number; base: string; body: string }>();

  app.get(
    '/passport/address/:address',
    {
      schema: {
        tags: ['passports'],
        summary: 'Passports of an owner account (active first, then revoked ones with active=false)',
        params: z.object({ address: z.string().max(128) }),
        response: { 200: addressPassportsSchema, ...errorResponses(400, 500) },
      },
    },
    async (request, reply) => {
      const raw = (request.params.address ?? '').trim(); // fastify already decoded the path parameter
      const accountId = isAccountId(raw) ? raw : parseHederaDid(raw)?.accountId;
      if (!accountId) throw new ApiError('invalid_request', 'address is missing or not an account id', { hint: 'address: expected an account id such as 0.0.1234 (or a did:hedera DID)' });
      if (!cache.isReady) await cacheReady(cache);
      const base = publicBase(ctx, request);
      const hit = addressBodies.get(accountId);
      if (hit && hit.version === cache.version && hit.base === base) return sendJson(reply, hit.body);
      const rows = passportsOfAccount(cache, accountId);
      const passports = rows.map((r) => passportJson(r, network, base));
      const body = serializeAddress({ address: accountId, passports, count: passports.length });
      if (rows.length > 0) {
        if (addressBodies.size >= 10_000) addressBodies.clear();
        addressBodies.set(accountId, { version: cache.version, base, body });
      }
      return sendJson(reply, body);
    },
  );

  app.get(
    '/passport/:tokenId/:serial',
    {
      schema: {
        tags: ['passports'],
        summary: 'One passport (404 when missing or revoked)',
        params: passportPathParams,
        response: { 200: passportSchema, ...errorResponses(400, 404, 500) },
      },
    },
    async (request, reply) => {
      const ids = parsePassportIds(request.params.tokenId, request.params.serial);
      if (!cache.isReady) await cacheReady(cache);
      const key = `${ids.tokenId}/${ids.serial}`;
      const row = cache.get(key);
      if (!row || row.revoked_at) throw notFound(ids.tokenId, ids.serial);
      const base = publicBase(ctx, request);
      const hit = passportBodies.get(key);
      if (hit && hit.row === row && hit.base === base) return sendJson(reply, hit.body);
      const body = serializePassport(passportJson(row, network, base));
      passportBodies.set(key, { row, base, body });
      return sendJson(reply, body);
    },
  );

  app.get(
    '/passports',
    {
      schema: {
        tags: ['passports'],
        summary: 'All passports of a collection (tokenId) or of a ledger network (env); paginated',
        querystring: passportsQuerySchema,
        response: { 200: passportListSchema, ...errorResponses(400, 500) },
      },
    },
    async (request) => {
      const q = request.query;
      if (!q.tokenId && !q.env) throw new ApiError('invalid_request', 'tokenId or env is required', { hint: `tokenId: e.g. ${tokenId}; env: one of ${HEDERA_NETWORKS.join(', ')}` });
      if (q.tokenId && !isEntityId(q.tokenId)) throw new ApiError('invalid_request', 'tokenId is not a token id', { hint: 'tokenId: expected shard.realm.num' });
      if (q.env && !(HEDERA_NETWORKS as readonly string[]).includes(q.env)) throw new ApiError('invalid_request', `env ${echo(q.env)} is not a ledger network`, { hint: `env: one of ${HEDERA_NETWORKS.join(', ')}` });
      if (!cache.isReady) await cacheReady(cache);
      const { rows, total } = pageOfPassports(cache, { network: q.env, tokenId: q.tokenId, limit: q.limit, offset: q.offset });
      const base = publicBase(ctx, request);
      const passports = rows.map((r) => passportJson(r, network, base));
      return { passports, count: passports.length, total, limit: q.limit, offset: q.offset };
    },
  );

  // ---------------------------------------------------------------- upgrade

  if (paymentsEnabled) {
    const payUpgrade = requireVerifiedPayment(
      (request) => {
        const plan = upgradePlans.get(request)!;
        return { amountTinybars: plan.price, payTo: ledger.deployment.payTo, description: `Passport upgrade ${plan.oldTier} -> ${plan.newTier}` };
      },
      { requiredCode: 'passport_payment_required', failedCode: 'passport_payment_failed' },
    );

    app.post(
      '/passport/:tokenId/:serial/upgrade',
      {
        schema: {
          tags: ['passports'],
          summary: 'Upgrade a passport in place to a higher tier: DID signature headers + x402 payment of the price difference',
          params: passportPathParams,
          body: upgradeBodySchema,
          response: { 200: upgradeResultSchema, ...errorResponses(202, 400, 401, 402, 403, 404, 500, 502, 503) },
        },
        preHandler: async function (request, reply) {
          const ids = parsePassportIds(request.params.tokenId, request.params.serial);
          await authenticate(request, request.body.did);
          const auth = request.auth!;
          const passport: PassportRow | null = await findPassport(sql, ids.tokenId, ids.serial);
          if (!passport || passport.revoked_at) throw notFound(ids.tokenId, ids.serial);
          // The holder comes from the ledger (mirror), not from PostgreSQL's copy of the owner.
          const holder = await ledger.mirror.getNftHolder(ids.tokenId, ids.serial).catch(() => {
            throw new ApiError('service_unavailable', 'The ledger mirror could not be read to check who holds the passport', { hint: 'Retry after 30 seconds' });
          });
          if (holder === null) throw notFound(ids.tokenId, ids.serial);
          if (holder !== auth.accountId) {
            throw new ApiError('passport_not_owned', `Passport ${ids.tokenId}/${ids.serial} is not owned by ${auth.did}`, { hint: `Sign with the account that owns ${ids.tokenId}/${ids.serial}` });
          }
          const requested = request.body.tier;
          if (!isTier(requested)) throw new ApiError('passport_tier_invalid', `Unknown tier ${echo(requested)}`, { hint: `Use one of ${TIERS.join(', ')} (GET /catalog)` });
          const plan = await paid.prepareUpgrade(request, auth, passport, requested);
          upgradePlans.set(request, plan);
          if (!plan.attach) await payUpgrade.call(app, request, reply);
        },
      },
      async (request, reply) => paid.upgrade(request, reply, request.auth!, upgradePlans.get(request)!),
    );
  }
};

export default passportRoutes;
