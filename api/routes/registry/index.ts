/**
 * Registry keys (SPEC 2 "Registry api key", 3, 4.6; DESIGN.md sections 6 and 10):
 *   POST   /api/v1/agents/register   { name, owner? } -> the record and api_key, shown this once
 *   GET    /api/v1/agents/me         Bearer apk_... (or an access token of POST /oauth/token) -> the record
 *   DELETE /api/v1/agents/me         the same -> revoked (instant, final), the record
 *
 * Registration: 32 random bytes make the key (apk_ + 43 base64url characters); only its sha256 is
 * stored. Caps, counted in the registration's own transaction (db/queries/registryKeys.ts): 5 per
 * address per rolling 24 h (429 register_rate_limited, Retry-After until a place frees), and with an
 * owner the day's sponsored budget (429 sponsored_quota_exceeded, Retry-After until UTC midnight).
 * A sponsored registration starts the sponsoredRegistration workflow, which writes its
 * registry.sponsored record to the directory topic, paid by the operator; if the workflow cannot
 * be started the registration is withdrawn (its places given back) and the answer is 503.
 * The key never reaches a log line, a workflow input or any later answer.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { normalizeIP } from '@fastify/rate-limit';
import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { registryRecordSchema, registryRegisteredSchema, registryRegisterBodySchema } from '../../schemas/registry.js';
import { passportState, scopedWorkflowId, type PassportState } from '../../passportState.js';
import { startOrAttach } from '../../workflowCalls.js';
import { insertRegistration, registryRecordOf, revokeRegistryKey, withdrawRegistration } from '../../../db/queries/registryKeys.js';
import { parseHederaDid } from '../../../domain/did.js';
import { apiKeyOf, keyPrefixOf, nextUtcMidnight, retryAfterSeconds } from '../../../domain/registry.js';
import { sponsoredRegistrationWorkflowId, type SponsoredRegistrationInput } from '../../../workflows/sponsoredRegistration.js';
import { keyDigest, type RegistryClients } from './clients.js';

export const REGISTER_ROUTE = '/api/v1/agents/register';
export const ME_ROUTE = '/api/v1/agents/me';

const registryRoutes: FastifyPluginAsyncZod<{ ctx: AppContext; clients: RegistryClients }> = async (app, { ctx, clients }) => {
  const sql = ctx.sql!;
  const now = () => ctx.now?.() ?? new Date();
  const network = ctx.ledger?.deployment.network ?? ctx.config.HEDERA_NETWORK;

  app.post(
    REGISTER_ROUTE,
    {
      schema: {
        tags: ['registry'],
        summary: 'Register for a registry api key (the keyed free tier); the key is shown once',
        description:
          'Returns the registration record and api_key (apk_ + 43 base64url characters), shown only in this answer; only its sha256 is kept. ' +
          'At most REGISTER_DAILY_CAP_PER_IP (default 5) registrations per address per rolling 24 h (429 register_rate_limited). ' +
          "With owner (a DID on this service's network) the registration is sponsored: the service pays for a registry.sponsored record on the directory topic, " +
          'within a daily budget that resets at UTC midnight (429 sponsored_quota_exceeded). Also the OAuth registration_endpoint: the record id is the client_id, the key the client_secret.',
        body: registryRegisterBodySchema,
        response: { 200: registryRegisteredSchema, ...errorResponses(400, 429, 503) },
      },
    },
    async (request, reply) => {
      const { name, owner } = request.body;
      if (owner !== undefined) {
        const did = parseHederaDid(owner)!;
        if (did.network !== network) {
          throw new ApiError('invalid_request', `owner must be a DID on this service's network (${network})`, { hint: `Use did:hedera:${network}:<accountId>` });
        }
        if (!ctx.temporal) {
          throw new ApiError('service_unavailable', 'Sponsored registrations are not available on this instance', { hint: 'Register without owner, or retry after 30 seconds' });
        }
      }
      const at = now();
      const key = apiKeyOf(randomBytes(32));
      const id = uuidv7();
      const outcome = await insertRegistration(sql, {
        id,
        name,
        owner: owner ?? null,
        keySha256: keyDigest(key),
        keyPrefix: keyPrefixOf(key),
        ipSha256: createHash('sha256').update(normalizeIP(request.ip)).digest(),
        now: at,
        ipCap: ctx.config.REGISTER_DAILY_CAP_PER_IP,
        sponsoredBudget: ctx.config.SPONSORED_DAILY_BUDGET,
      });
      if (!outcome.ok) {
        if (outcome.refused === 'ip_cap') {
          const seconds = retryAfterSeconds(at, outcome.retryAt);
          throw new ApiError('register_rate_limited', `At most ${ctx.config.REGISTER_DAILY_CAP_PER_IP} registrations per address per 24 h`, {
            hint: `Retry after ${outcome.retryAt.toISOString()} (Retry-After: ${seconds} s)`,
            headers: { 'retry-after': String(seconds) },
          });
        }
        const reset = nextUtcMidnight(at);
        const seconds = retryAfterSeconds(at, reset);
        throw new ApiError('sponsored_quota_exceeded', `Today's sponsored registrations (${ctx.config.SPONSORED_DAILY_BUDGET}) are used up`, {
          hint: `Retry after ${reset.toISOString()} (UTC midnight) or register without owner`,
          headers: { 'retry-after': String(seconds) },
        });
      }
      const row = outcome.row;
      if (row.owner !== null) {
        const state: PassportState = ctx.ledger ? passportState(ctx) : { workflowWaitMs: 0 };
        const input: SponsoredRegistrationInput = { id, name: row.name, owner: row.owner, createdAt: at.getTime(), ...(state.timings ? { timings: state.timings } : {}) };
        try {
          await startOrAttach(ctx, 'sponsoredRegistration', scopedWorkflowId(state, sponsoredRegistrationWorkflowId(id)), input, {
            staticSummary: `Sponsored registry record for "${row.name}" (${row.owner})`,
          });
        } catch (err) {
          await withdrawRegistration(sql, id);
          throw err;
        }
      }
      await clients.changed(id);
      reply.header('cache-control', 'no-store');
      return { ...registryRecordOf(row), api_key: key };
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
