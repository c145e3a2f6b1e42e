/**
 * Registering for a registry key (POST /api/v1/agents/register; SPEC 2 "Registry api key", 4.6;
 * DESIGN.md sections 6 and 10): the key, the caps and the sponsored-registration orchestration
 * behind the route (api/routes/registry/index.ts parses, proves the owner by DID signature, maps).
 *
 * 32 random bytes make the key (apk_ + 43 base64url characters); only its sha256 is stored. Caps,
 * counted in the registration's own transaction (db/queries/registryKeys.ts): REGISTER_DAILY_CAP_PER_IP
 * per address per rolling 24 h (429 register_rate_limited, Retry-After until a place frees), and with
 * an owner the owner's part of the day's sponsored budget (SPONSORED_DAILY_PER_OWNER) and the day's
 * budget itself (SPONSORED_DAILY_BUDGET), either full a 429 sponsored_quota_exceeded with Retry-After
 * until UTC midnight.
 * A sponsored registration starts the sponsoredRegistration workflow, which writes its
 * registry.sponsored record to the directory topic, paid by the operator; if the workflow cannot be
 * started the registration is withdrawn (its places given back) and the error is answered. The key
 * never reaches a log line, a workflow input or any later answer.
 */
import { createHash, randomBytes } from 'node:crypto';
import { normalizeIP } from '@fastify/rate-limit';
import { v7 as uuidv7 } from 'uuid';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { scopedWorkflowId, type WorkflowSettings } from '../workflowSettings.js';
import { startOrAttach } from '../workflowCalls.js';
import { keyDigest, type RegistryClients } from './clients.js';
import { insertRegistration, registryRecordOf, withdrawRegistration } from '../../db/queries/registryKeys.js';
import { apiKeyOf, keyPrefixOf, nextUtcMidnight, retryAfterSeconds, type RegistryRecord } from '../../domain/registry.js';
import { sponsoredRegistrationContract, sponsoredRegistrationWorkflowId, type SponsoredRegistrationInput } from '../../workflows/contracts/sponsoredRegistration.js';

/** The registrations of one app. */
export function registryRegistrations(ctx: AppContext, settings: WorkflowSettings, clients: RegistryClients) {
  const sql = ctx.sql!;
  const now = () => ctx.now?.() ?? new Date();

  /**
   * Registers `name` from address `ip`; `owner` (a DID proven by the caller's signature) makes it
   * sponsored. Answers the record and the key (shown this once).
   */
  async function register(r: { name: string; owner?: string; ip: string }): Promise<RegistryRecord & { api_key: string }> {
    const { name, owner } = r;
    if (owner !== undefined) {
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
      ipSha256: createHash('sha256').update(normalizeIP(r.ip)).digest(),
      now: at,
      ipCap: ctx.config.REGISTER_DAILY_CAP_PER_IP,
      sponsoredBudget: ctx.config.SPONSORED_DAILY_BUDGET,
      sponsoredPerOwner: ctx.config.SPONSORED_DAILY_PER_OWNER,
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
      const what =
        outcome.refused === 'sponsored_owner_cap'
          ? `${owner} has taken its ${ctx.config.SPONSORED_DAILY_PER_OWNER} sponsored registrations of today`
          : `Today's sponsored registrations (${ctx.config.SPONSORED_DAILY_BUDGET}) are used up`;
      throw new ApiError('sponsored_quota_exceeded', what, {
        hint: `Retry after ${reset.toISOString()} (UTC midnight) or register without owner`,
        headers: { 'retry-after': String(seconds) },
      });
    }
    const row = outcome.row;
    if (row.owner !== null) {
      const input: SponsoredRegistrationInput = { id, name: row.name, owner: row.owner, createdAt: at.getTime(), ...(settings.timings ? { timings: settings.timings } : {}) };
      try {
        await startOrAttach(ctx, sponsoredRegistrationContract, scopedWorkflowId(settings, sponsoredRegistrationWorkflowId(id)), input, {
          staticSummary: `Sponsored registry record for "${row.name}" (${row.owner})`,
        });
      } catch (err) {
        await withdrawRegistration(sql, id);
        throw err;
      }
    }
    await clients.changed(id);
    return { ...registryRecordOf(row), api_key: key };
  }

  return { register };
}
