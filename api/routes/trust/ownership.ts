/**
 * Domain ownership challenges (SPEC 2 "Domain ownership challenge", 4.5; DESIGN.md sections 5, 6, 10):
 *
 *   GET  /api/trust/{domain}/challenge         -> { token, dns_record, well_known_url, expires_at }
 *   POST /api/trust/{domain}/verify-ownership  { token } -> 200 the proof, 403 not proven yet
 *
 * A challenge is a row of domain_challenges (so every API instance agrees) and a domainOwnership
 * workflow (id domain-challenge:{domain}:{token}) that checks the DNS TXT record and the well-known
 * file at an interval until one holds the token or the 24 h are over. GET hands out the domain's
 * pending challenge again while it has more than a minute left, so repeated GETs do not multiply
 * workflows; otherwise a new one. verify-ownership asks the workflow for a check now (Workflow
 * Update checkNow, which answers the check's outcome) and answers it: 200 when proven, 403
 * trust_ownership_not_proven (with what DNS and the file showed) when not, 404 for a token the
 * domain never had, 400 trust_challenge_expired once the challenge is over. A verified challenge
 * stays verified; the snapshots read it (db/queries/domainOwnership.ts findDomainOwnership).
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import type { AppContext } from '../../context.js';
import { ApiError, echo } from '../../errors.js';
import { errorResponses, linkMapSchema } from '../../schemas/common.js';
import { domainOwnershipSchema, trustDomainParams } from '../../schemas/trust.js';
import { startOrAttach, temporalClient } from '../../workflowCalls.js';
import { WORKFLOW_WAIT_MS } from '../../passportState.js';
import { ownershipDnsRecord, ownershipWellKnownUrl, parseDomainName } from '../../../domain/domainName.js';
import {
  findDomainChallenge,
  findOpenChallenge,
  insertDomainChallenge,
  ownershipOf,
  type DomainChallengeRow,
} from '../../../db/queries/domainOwnership.js';
import { domainOwnershipWorkflowId, type DomainOwnershipInput } from '../../../workflows/domainOwnership.js';
import type { OwnershipCheckResult } from '../../../activities/web/domainOwnership.js';

/** Tokens: 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;
/** A pending challenge is handed out again only while it has at least this long left. */
const REUSE_MIN_LEFT_MS = 60_000;

const challengeSchema = z
  .object({
    token: z.string(),
    dns_record: z.string(),
    well_known_url: z.string(),
    expires_at: z.string(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'DomainOwnershipChallenge' });

const verifyBodySchema = z.strictObject({ token: z.string().min(1).max(64) });

const verifyResultSchema = z
  .object({
    domain: z.string(),
    verified: z.boolean(),
    domain_ownership: domainOwnershipSchema,
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'DomainOwnershipVerification' });

/** The validated, normalised domain of a trust route, or 400 trust_domain_invalid (as GET /api/trust/{domain}). */
export function domainOf(raw: string): string {
  const parsed = parseDomainName(raw);
  if (!parsed.ok) throw new ApiError('trust_domain_invalid', `${echo(raw)} is not a domain name: ${parsed.reason}`, { hint: 'Give a bare domain such as example.com (no scheme, port, path or IP address)' });
  return parsed.domain;
}

function challengeBody(row: DomainChallengeRow) {
  const d = encodeURIComponent(row.domain);
  return {
    token: row.token,
    dns_record: ownershipDnsRecord(row.domain, row.token),
    well_known_url: ownershipWellKnownUrl(row.domain),
    expires_at: row.expires_at.toISOString(),
    _links: {
      verify: { href: `/api/trust/${d}/verify-ownership`, method: 'POST' as const },
      snapshot: { href: `/api/trust/${d}` },
    },
  };
}

const ownershipRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const config = ctx.config;

  const startChallengeWorkflow = (row: DomainChallengeRow) => {
    const input: DomainOwnershipInput = {
      domain: row.domain,
      token: row.token,
      expiresAtMs: row.expires_at.getTime(),
      pollIntervalMs: config.TRUST_OWNERSHIP_POLL_MS,
    };
    return startOrAttach(ctx, 'domainOwnership', domainOwnershipWorkflowId(row.domain, row.token), input, {
      staticSummary: `ownership challenge of ${row.domain}`,
    });
  };

  app.get(
    '/api/trust/:domain/challenge',
    {
      schema: {
        summary: 'An ownership challenge for the domain (DNS TXT record or well-known file), valid 24 h',
        tags: ['trust'],
        params: trustDomainParams,
        response: { 200: challengeSchema, ...errorResponses(400, 429, 503) },
      },
    },
    async (request) => {
      const domain = domainOf(request.params.domain);
      let row = await findOpenChallenge(sql, domain);
      if (row && row.expires_at.getTime() - Date.now() < REUSE_MIN_LEFT_MS) row = null;
      if (!row) {
        const token = randomBytes(32).toString('base64url');
        row = await insertDomainChallenge(sql, { token, domain, expiresAt: new Date(Date.now() + config.TRUST_CHALLENGE_TTL_MS) });
      }
      // started (or attached to) on every GET, so a challenge whose start failed once gets its workflow
      await startChallengeWorkflow(row);
      return challengeBody(row);
    },
  );

  const verified = (row: DomainChallengeRow) => ({
    domain: row.domain,
    verified: true,
    domain_ownership: ownershipOf(row),
    _links: { snapshot: { href: `/api/trust/${encodeURIComponent(row.domain)}` } },
  });

  const expired = (domain: string) =>
    new ApiError('trust_challenge_expired', `The challenge expired before ${domain} was proven`, { hint: `Get a new challenge from GET /api/trust/${domain}/challenge` });

  /** Asks the challenge's workflow for a check now; null when the workflow has ended (read the row). */
  const checkNow = async (row: DomainChallengeRow): Promise<OwnershipCheckResult | null> => {
    const client = await temporalClient(ctx);
    const workflowId = domainOwnershipWorkflowId(row.domain, row.token);
    const ask = async () => client.workflow.getHandle(workflowId).executeUpdate<OwnershipCheckResult, []>('checkNow');
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new ApiError('service_unavailable', 'The ownership check did not finish in time', { hint: 'Send the same request again in a few seconds' })),
        WORKFLOW_WAIT_MS,
      );
    });
    try {
      try {
        return await Promise.race([ask(), timeout]);
      } catch (err) {
        if (err instanceof WorkflowUpdateFailedError) return null; // refused by the validator: the challenge has ended
        if (!(err instanceof WorkflowNotFoundError) && !/completed|not found/i.test(String((err as Error)?.message))) throw err;
        // no workflow running: it ended (read the row) or never started (start it, then ask)
        const fresh = await findDomainChallenge(sql, row.domain, row.token);
        if (!fresh || fresh.status !== 'pending' || fresh.expires_at.getTime() <= Date.now()) return null;
        await startChallengeWorkflow(fresh);
        return await Promise.race([ask(), timeout]);
      }
    } catch (err) {
      if (err instanceof ApiError) throw err;
      throw new ApiError('service_unavailable', 'The ownership check could not be run', { hint: 'Retry after 30 seconds' });
    } finally {
      clearTimeout(timer);
    }
  };

  app.post(
    '/api/trust/:domain/verify-ownership',
    {
      schema: {
        summary: 'Check the ownership challenge now: 200 when the DNS record or the well-known file holds the token, 403 when not yet',
        tags: ['trust'],
        params: trustDomainParams,
        body: verifyBodySchema,
        response: { 200: verifyResultSchema, ...errorResponses(400, 403, 404, 429, 503) },
      },
    },
    async (request) => {
      const domain = domainOf(request.params.domain);
      const { token } = request.body;
      if (!TOKEN.test(token)) throw new ApiError('trust_challenge_not_found', `No challenge ${echo(token)} for ${domain}`, { hint: `Get a challenge from GET /api/trust/${domain}/challenge` });
      const row = await findDomainChallenge(sql, domain, token);
      if (!row) throw new ApiError('trust_challenge_not_found', `No challenge ${echo(token)} for ${domain}`, { hint: `Get a challenge from GET /api/trust/${domain}/challenge` });
      if (row.status === 'verified') return verified(row);
      if (row.status === 'expired' || row.expires_at.getTime() <= Date.now()) throw expired(domain);

      const result = await checkNow(row);
      const after = await findDomainChallenge(sql, domain, token);
      if (after?.status === 'verified') return verified(after);
      if (!after || after.status === 'expired' || after.expires_at.getTime() <= Date.now()) throw expired(domain);
      throw new ApiError('trust_ownership_not_proven', `The ownership of ${domain} is not proven yet${result ? `: ${result.detail}` : ''}`, {
        hint: `Publish ${ownershipDnsRecord(domain, token)} or serve the token at ${ownershipWellKnownUrl(domain)}, then verify again`,
      });
    },
  );
};

export default ownershipRoutes;
