/**
 * Domain ownership challenges (SPEC 2 "Domain ownership challenge", 4.5; DESIGN.md sections 6, 10
 * and 11). HTTP only; the state and the checks are api/trust/ownership.ts.
 *
 *   GET  /api/trust/{domain}/challenge[?did=...]  -> { token, dns_record, well_known_url, expires_at,
 *        well_known_content, did? } anonymous; writes one row (per-IP daily quota, 429), starts nothing,
 *        looks nothing up. With ?did= the record carries the token and only that DID can verify; without,
 *        it carries the token's digest and the first DID to present the token claims it.
 *   POST /api/trust/{domain}/verify-ownership   { did, token }, signed by did
 *        -> 200 the proof (named by its DID, with its expiry), 403 not proven yet (what DNS and the
 *        file showed), 404 no such challenge for this DID or the domain has no public address, 400
 *        challenge or proof expired, 429 quota
 */
import { bodyDid } from '../../auth/bodyDid.js';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { didString, errorResponses, linkMapSchema } from '../../schemas/common.js';
import { domainOwnershipSchema, trustDomainParams } from '../../schemas/trust.js';
import { ownershipDnsRecord, ownershipTxtValue, ownershipWellKnownUrl } from '../../../domain/domainName.js';
import { ownershipOf, publishedValue, type DomainChallengeRow } from '../../../db/queries/domainOwnership.js';
import { DomainOwnership } from '../../trust/ownership.js';
import { domainOf } from '../../trust/domainOf.js';

const challengeSchema = z
  .object({
    token: z.string(),
    dns_record: z.string(),
    well_known_url: z.string(),
    expires_at: z.string(),
    well_known_content: z.string().describe('the line to serve at well_known_url (the same value as the TXT record of dns_record)'),
    did: z
      .string()
      .optional()
      .describe('the DID the challenge was issued for (?did=): only a request signed by it can verify it; absent on a challenge issued without a DID, which the first DID to present its token claims'),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'DomainOwnershipChallenge' });

const challengeQuerySchema = z.object({
  did: didString
    .optional()
    .describe('optional: the DID that will verify the challenge (POST .../verify-ownership signed by it); the record then carries the token itself. Without it the record carries base64url(sha256(token)) and the token must be kept private'),
});

const verifyBodySchema = z.strictObject({ did: didString, token: z.string().min(1).max(64) });

const verifyResultSchema = z
  .object({
    domain: z.string(),
    verified: z.boolean(),
    domain_ownership: domainOwnershipSchema,
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'DomainOwnershipVerification' });

function challengeBody(row: DomainChallengeRow) {
  const d = encodeURIComponent(row.domain);
  const value = publishedValue(row);
  return {
    token: row.token,
    dns_record: ownershipDnsRecord(row.domain, value),
    well_known_url: ownershipWellKnownUrl(row.domain),
    expires_at: row.expires_at.toISOString(),
    well_known_content: ownershipTxtValue(value),
    ...(row.did ? { did: row.did } : {}),
    _links: {
      verify: { href: `/api/trust/${d}/verify-ownership`, method: 'POST' as const },
      snapshot: { href: `/api/trust/${d}` },
    },
  };
}

const ownershipRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const ownership = new DomainOwnership(ctx);

  app.get(
    '/api/trust/:domain/challenge',
    {
      schema: {
        summary: 'An ownership challenge of the domain (DNS TXT record or well-known file), valid 24 h',
        description:
          'Anonymous; starts no work and looks nothing up: any syntactically valid name gets a challenge; the domain\'s resolution and public-address rules apply at verify-ownership. ' +
          'Each new challenge counts against TRUST_CHALLENGES_DAILY_PER_IP (429 trust_quota_exceeded). Two forms: ' +
          '(1) with ?did=, bound to that DID: dns_record and well_known_content carry the token itself, and only POST .../verify-ownership signed by that DID can prove it (a token read from the record proves nothing for another DID); the DID\'s open challenge is handed out again, free, while it has more than a minute left. ' +
          '(2) without ?did=, unbound: dns_record and well_known_content carry agent-passport-verification=<base64url(sha256(token))>, not the token; keep the token private. ' +
          'The first DID that presents the token to POST .../verify-ownership (signed by it) claims the challenge and the proof names it; someone who only reads the record or the file cannot. ' +
          'Publish dns_record as a TXT record, or serve well_known_content as the first line of well_known_url, then verify.',
        tags: ['trust'],
        params: trustDomainParams,
        querystring: challengeQuerySchema,
        response: { 200: challengeSchema, ...errorResponses(400, 429, 503) },
      },
    },
    async (request) => challengeBody(await ownership.issue(domainOf(request.params.domain), request.query.did, request.ip)),
  );

  app.post(
    '/api/trust/:domain/verify-ownership',
    {
      schema: {
        summary: 'Check the ownership challenge now: 200 when the DNS record or the well-known file holds the token, 403 when not yet',
        description:
          'DID-signed (X-Service-DID, X-Service-Challenge, X-Service-Signature); body { did, token }: the DID the challenge was issued for, or for a challenge issued without ?did= any DID, the first to present the token claiming it (404 trust_challenge_not_found for every other DID). ' +
          'Before a check the domain must resolve to public addresses only (404 trust_domain_not_found otherwise, one answer for a name that does not exist and one that is not public). ' +
          'A proof names that DID and counts for TRUST_OWNERSHIP_TTL_MS (default 30 days); a new challenge proven the same way renews it. ' +
          'Each check counts against TRUST_VERIFY_DAILY_PER_DID and TRUST_VERIFY_DAILY_PER_IP (429 trust_quota_exceeded); a proof already made answers without a check.',
        tags: ['trust'],
        params: trustDomainParams,
        body: verifyBodySchema,
        response: { 200: verifyResultSchema, ...errorResponses(400, 401, 403, 404, 429, 503) },
      },
      preHandler: app.signedRequest(bodyDid('did')),
    },
    async (request) => {
      const domain = domainOf(request.params.domain);
      const outcome = await ownership.verify(domain, request.body.token, request.auth!.did, request.ip);
      if (!outcome.verified) throw ownership.notProven(outcome.row, outcome.detail);
      return {
        domain,
        verified: true,
        domain_ownership: ownershipOf(outcome.row),
        _links: { snapshot: { href: `/api/trust/${encodeURIComponent(domain)}` }, attest: { href: `/api/trust/${encodeURIComponent(domain)}/attest`, method: 'POST' as const } },
      };
    },
  );
};

export default ownershipRoutes;
