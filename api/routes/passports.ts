/**
 * Passports (SPEC 2, 3, 4.1; DESIGN.md sections 5 and 6), HTTP only:
 *   POST /passport/request                      signed request + x402 -> passportIssuance workflow
 *   GET  /passport/address/{address}            passports of an owner account (active first)
 *   GET  /passport/{tokenId}/{serial}           one active passport (404 missing or revoked)
 *   GET  /passports?tokenId=|env=               paginated list (one of tokenId, env required)
 *   POST /passport/{tokenId}/{serial}/upgrade   signed request + x402 for the price difference -> passportUpgrade
 *
 * Paid routes run, in order, in one named handler each: DID signature (the unpaid first call only
 * verifies it, without consuming the challenge, so the x402 client can retry the same request with
 * its payment), the request's own checks (domain/tiers.ts issuanceRefusal, tierRefusal; ownership
 * on the ledger), the refusals that must come before money moves (api/passports/issuance.ts
 * prepareIssuance, upgrade.ts prepareUpgrade), the x402 gate that VERIFIES the payment (no money
 * moves in the API), then issue (or upgrade): the payment recorded with the request's claim and the
 * workflow that settles it and issues (or upgrades), waited for at most the app's bounded wait
 * (then 202 request_pending with a Location to poll).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { publicBase, type AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { WORKFLOW_WAIT_MS } from '../workflowSettings.js';
import { notFound, parsePassportIds, passportJson, refusePassport } from '../passports/views.js';
import { cacheReady, pageOfPassports, passportsOfAccount } from '../passports/cache.js';
import { sendJson, serializerFor } from '../serializer.js';
import { errorResponses, type ZodRequest } from '../schemas/common.js';
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
import { verifyPayment } from '../plugins/x402.js';
import { paymentSignatureOf } from '../passports/claims.js';
import { issuanceTerms, issue, prepareIssuance } from '../passports/issuance.js';
import { prepareUpgrade, upgrade, upgradeTerms } from '../passports/upgrade.js';
import { HEDERA_NETWORKS, isAccountId, isEntityId, parseHederaDid } from '@agent-passport/core/did';
import { issuanceRefusal, issuedCapabilities, tierRefusal, type Tier } from '../../domain/tiers.js';
import { findPassport, type PassportRow } from '../../db/queries/passports.js';

const requestSchema = {
  tags: ['passports'],
  summary: 'Buy a passport NFT: DID signature headers + x402 payment of the tier price (HBAR)',
  description:
    'Without PAYMENT-SIGNATURE the answer is 402 with PAYMENT-REQUIRED (the signature headers are checked but the challenge is not used up, so the same request can be retried with the payment). ' +
    'The payment is verified here and settled by the issuance workflow. ' +
    `If issuance takes longer than ${WORKFLOW_WAIT_MS / 1000} s the answer is 202 request_pending with a Location to poll (GET /passport/address/{accountId}).`,
  body: passportRequestBodySchema,
  response: { 200: passportIssuanceResultSchema, ...errorResponses(202, 400, 401, 402, 403, 409, 500, 502, 503) },
};

const upgradeSchema = {
  tags: ['passports'],
  summary: 'Upgrade a passport in place to a higher tier: DID signature headers + x402 payment of the price difference',
  params: passportPathParams,
  body: upgradeBodySchema,
  response: { 200: upgradeResultSchema, ...errorResponses(202, 400, 401, 402, 403, 404, 500, 502, 503) },
};

const passportRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const passports = app.passports;
  const { sql, ledger, network, tokenId, cache } = passports;
  const paymentsEnabled = app.hasDecorator('x402');

  /** The DID signature: the unpaid first call only checks the challenge; the paid retry uses it up. */
  const authenticate = async (request: FastifyRequest, did: string | undefined) => {
    await app.signedRequest(() => did, { consume: (r) => paymentSignatureOf(r) !== null })(request);
    return request.auth!;
  };

  /** POST /passport/request: signature, the request's own checks, the refusals before money, the payment, the issuance. */
  async function requestPassport(request: ZodRequest<typeof requestSchema>, reply: FastifyReply) {
    const body = request.body;
    const auth = await authenticate(request, body.did);
    refusePassport(issuanceRefusal(body));
    const tier = body.tier as Tier; // issuanceRefusal accepted it
    const asked = { tier, capabilities: issuedCapabilities(tier, body.capabilities), ...(body.endpoint ? { endpoint: body.endpoint } : {}) };
    const { plan, pay } = await prepareIssuance(passports, request, auth, asked);
    if (pay) await verifyPayment(request, issuanceTerms(passports, plan));
    return issue(passports, request, reply, auth, plan);
  }

  /** POST /passport/{tokenId}/{serial}/upgrade: signature, the holder on the ledger, the tier, the refusals before money, the payment, the upgrade. */
  async function upgradePassport(request: ZodRequest<typeof upgradeSchema>, reply: FastifyReply) {
    const ids = parsePassportIds(request.params.tokenId, request.params.serial);
    const auth = await authenticate(request, request.body.did);
    const passport = await heldPassport(ids, auth);
    refusePassport(tierRefusal(request.body.tier));
    const plan = await prepareUpgrade(passports, request, auth, passport, request.body.tier as Tier);
    if (!plan.attach) await verifyPayment(request, upgradeTerms(passports, plan), { requiredCode: 'passport_payment_required', failedCode: 'passport_payment_failed' });
    return upgrade(passports, request, reply, auth, plan);
  }

  /** The passport, held by the signer on the ledger (mirror), not by PostgreSQL's copy of the owner: 404, 403 passport_not_owned, 503. */
  async function heldPassport(ids: { tokenId: string; serial: number }, auth: { accountId: string; did: string }): Promise<PassportRow> {
    const passport = await findPassport(sql, ids.tokenId, ids.serial);
    if (!passport || passport.revoked_at) throw notFound(ids.tokenId, ids.serial);
    const holder = await ledger.mirror.getNftHolder(ids.tokenId, ids.serial).catch(() => {
      throw new ApiError('service_unavailable', 'The ledger mirror could not be read to check who holds the passport', { hint: 'Retry after 30 seconds' });
    });
    if (holder === null) throw notFound(ids.tokenId, ids.serial);
    if (holder !== auth.accountId) {
      throw new ApiError('passport_not_owned', `Passport ${ids.tokenId}/${ids.serial} is not owned by ${auth.did}`, { hint: `Sign with the account that owns ${ids.tokenId}/${ids.serial}` });
    }
    return passport;
  }

  if (paymentsEnabled) app.post('/passport/request', { schema: requestSchema }, requestPassport);

  // ---------------------------------------------------------------- reads
  // Served from the memory cache kept current by NOTIFY (api/passports/cache.ts); bodies are
  // serialised once per passport version and sent as they are.

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

  if (paymentsEnabled) app.post('/passport/:tokenId/:serial/upgrade', { schema: upgradeSchema }, upgradePassport);
};

export default passportRoutes;
