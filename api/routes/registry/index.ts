/**
 * Registry keys (SPEC 2 "Registry api key", 3, 4.6; DESIGN.md sections 6 and 10):
 *   POST   /api/v1/agents/register   { name, owner? } -> the record and api_key, shown this once
 *   GET    /api/v1/agents/me         Bearer apk_... (or an access token of POST /oauth/token) -> the record
 *   DELETE /api/v1/agents/me         the same -> revoked (instant, final), the record
 *
 * Registration (the key, the caps, the sponsored workflow) is api/registry/registration.ts; the
 * keys and access tokens a Bearer credential names are api/registry/clients.ts.
 * The owner is recorded only when the request carries DID signature headers of that DID (the
 * signed-request guard, api/plugins/signedRequest.ts; issue 20 item 8): without any signature
 * header the registration is made without owner (the plain registration: nothing for the operator
 * to pay); with them, a signature that fails or names another DID is refused as on every signed route.
 */
import { bodyDid } from '../../auth/bodyDid.js';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { registryRecordSchema, registryRegisteredSchema, registryRegisterBodySchema } from '../../schemas/registry.js';
import type { RegistryClients } from '../../registry/clients.js';
import { registryRegistrations } from '../../registry/registration.js';
import { registryRecordOf, revokeRegistryKey } from '../../../db/queries/registryKeys.js';
import { parseHederaDid } from '@agent-passport/core/did';
import { CHALLENGE_HEADER, DID_HEADER, SIGNATURE_HEADER } from '../../plugins/signedRequest.js';

export const REGISTER_ROUTE = '/api/v1/agents/register';
export const ME_ROUTE = '/api/v1/agents/me';

const registryRoutes: FastifyPluginAsyncZod<{ ctx: AppContext; clients: RegistryClients }> = async (app, { ctx, clients }) => {
  const sql = ctx.sql!;
  const now = () => ctx.now?.() ?? new Date();
  const network = ctx.ledger?.deployment.network ?? ctx.config.HEDERA_NETWORK;
  /** The guard proving `owner` (present with PostgreSQL and a ledger, as the other signed routes). */
  const ownerSignature = app.hasDecorator('signedRequest') ? app.signedRequest(bodyDid('owner')) : undefined;
  const signatureHeaders = [DID_HEADER, CHALLENGE_HEADER, SIGNATURE_HEADER];
  const registrations = registryRegistrations(ctx, app.workflowSettings, clients);

  app.post(
    REGISTER_ROUTE,
    {
      schema: {
        tags: ['registry'],
        summary: 'Register for a registry api key (the keyed free tier); the key is shown once',
        description:
          'Returns the registration record and api_key (apk_ + 43 base64url characters), shown only in this answer; only its sha256 is kept. ' +
          'At most REGISTER_DAILY_CAP_PER_IP (default 5) registrations per address per rolling 24 h (429 register_rate_limited). ' +
          "With owner (a DID on this service's network) signed by that DID (X-Service-DID, X-Service-Challenge, X-Service-Signature of GET /auth/challenge) the registration is sponsored: the service pays for a registry.sponsored record on the directory topic, " +
          'within a daily budget (SPONSORED_DAILY_BUDGET, default 100) of which one owner takes at most SPONSORED_DAILY_PER_OWNER (default 5), both resetting at UTC midnight (429 sponsored_quota_exceeded). An owner without signature headers is not recorded: the answer is the plain registration (owner null, sponsored false). ' +
          'Signature headers that do not verify or name another DID than owner are refused (401 auth_*, 403 auth_did_mismatch). The record id is also an OAuth client_id and the key its client_secret (POST /oauth/token); the OAuth registration_endpoint itself is POST /oauth/register (RFC 7591), the same registration.',
        body: registryRegisterBodySchema,
        response: { 200: registryRegisteredSchema, ...errorResponses(400, 401, 403, 429, 503) },
      },
    },
    async (request, reply) => {
      const { name } = request.body;
      let owner: string | undefined;
      if (request.body.owner !== undefined) {
        const did = parseHederaDid(request.body.owner)!;
        if (did.network !== network) {
          throw new ApiError('invalid_request', `owner must be a DID on this service's network (${network})`, { hint: `Use did:hedera:${network}:<accountId>` });
        }
        // an owner is recorded (and sponsored) only when the request is signed by that DID
        if (signatureHeaders.some((h) => request.headers[h] !== undefined)) {
          if (!ownerSignature) {
            throw new ApiError('service_unavailable', 'Signed registrations are not available on this instance', { hint: 'Register without owner, or retry after 30 seconds' });
          }
          await ownerSignature(request);
          owner = request.auth?.did;
        }
      }
      const registered = await registrations.register({ name, ...(owner !== undefined ? { owner } : {}), ip: request.ip });
      reply.header('cache-control', 'no-store');
      return registered;
    },
  );

  app.get(
    ME_ROUTE,
    {
      schema: {
        tags: ['registry'],
        summary: 'The registration record of the Bearer key (or OAuth access token)',
        description: 'Authorization: Bearer apk_<key>, or Bearer <access token of POST /oauth/token>. 401 agent_key_invalid (missing, malformed, unknown, expired) or agent_key_revoked.',
        response: { 200: registryRecordSchema, ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      const row = await clients.require(request);
      reply.header('cache-control', 'no-store');
      return registryRecordOf(row);
    },
  );

  app.delete(
    ME_ROUTE,
    {
      schema: {
        tags: ['registry'],
        summary: 'Revoke the Bearer key (instant and final); answers the revoked record',
        description: 'Authorization: Bearer apk_<key>, or Bearer <access token of POST /oauth/token>. 401 agent_key_invalid (missing, malformed, unknown, expired) or agent_key_revoked.',
        response: { 200: registryRecordSchema, ...errorResponses(401) },
      },
    },
    async (request, reply) => {
      const row = await clients.require(request);
      const revoked = await revokeRegistryKey(sql, row.id, now());
      if (!revoked) throw new ApiError('agent_key_invalid', 'The registration no longer exists', { hint: 'Register again with POST /api/v1/agents/register' });
      await clients.changed(row.id);
      reply.header('cache-control', 'no-store');
      return registryRecordOf(revoked);
    },
  );
};

export default registryRoutes;
