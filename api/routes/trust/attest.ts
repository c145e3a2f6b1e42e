/**
 * POST /api/trust/{domain}/attest (SPEC 4.5; DESIGN.md sections 6, 10 and 11): a passport holder
 * who proved ownership of the domain, signed in by DID signature (body { did }, the DID that
 * signed), has the domain's current trust snapshot written on chain and gets it back with `on_chain`.
 *
 *   1. domain validated (400 trust_domain_invalid), signature checked (401 auth_*), the signer's
 *      passport: active in the projection and held by the signer on the ledger
 *      (api/passports/heldPassport.ts), else 404 passport_not_found (SPEC: 404 no passport); the signer's
 *      proven, unexpired ownership of the domain, else 403 trust_ownership_required
 *      (api/trust/attestations.ts);
 *   2. the current snapshot, exactly as GET /api/trust/{domain} serves it (api/trust/snapshots.ts);
 *   3. a hash not yet recorded (or whose attempt failed) takes one place of the DID's daily quota
 *      (TRUST_ATTEST_DAILY_PER_DID; 429 trust_quota_exceeded), then trust_attestations records it
 *      under its snapshot_hash (first attester wins) and workflow trustAttest (id
 *      trust-attest:{domain}:{snapshot_hash}) sends attestDomain(domain, hash) to the passport
 *      contract, once per snapshot hash however often it is asked;
 *   4. answer: the recorded snapshot with on_chain { chain "eip155", chain_id, contract_address,
 *      token_id (the attestation token minted by attestDomain), attested_at (block time),
 *      attested_by (the attesting DID), tx_hash, revoked false }. A snapshot already attested
 *      answers at once from PostgreSQL; a chain slower than the bounded wait answers 202
 *      request_pending whose Location, GET /api/trust/{domain}/attestations/{snapshot_hash},
 *      answers the attestation's state (also served here).
 * Without an EVM chain and attester key configured the route answers 503 service_unavailable.
 * Steps 2 and 3 and the workflow are api/trust/attestations.ts attestSnapshot; this file is HTTP only.
 */
import { bodyDid } from '../../auth/bodyDid.js';
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { ApiError, echo } from '../../errors.js';
import { didString, errorResponses, linkMapSchema } from '../../schemas/common.js';
import { onChainSchema, trustDomainParams, trustSnapshotSchema } from '../../schemas/trust.js';
import { scanAdmission } from '../../trust/scanQuota.js';
import { domainOf } from '../../trust/domainOf.js';
import { heldActivePassport } from '../../passports/heldPassport.js';
import { findAttestation, type AttestationRow, type OnChainAttestation } from '../../../db/queries/trustAttestations.js';
import { attestationState, attestationUrl, attestSnapshot, requireOwnership } from '../../trust/attestations.js';

const attestBodySchema = z.strictObject({ did: didString });

const attestationParams = z.object({ domain: z.string().min(1).max(300), snapshotHash: z.string().min(1).max(128) });

const attestationStateSchema = z
  .object({
    domain: z.string(),
    snapshot_hash: z.string(),
    status: z.enum(['pending', 'sending', 'confirmed', 'failed']).describe('pending: recorded; sending: transaction signed and sent; confirmed: on chain; failed: send attest again'),
    attested_by: z.string(),
    requested_at: z.string(),
    updated_at: z.string(),
    on_chain: onChainSchema.optional(),
    snapshot: trustSnapshotSchema.optional().describe('once confirmed: the attested snapshot with on_chain, as attest answers it'),
    _links: linkMapSchema,
  })
  .meta({ id: 'TrustAttestationState' });

const attestRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;

  /** The signer holds an active passport on the ledger, else 404 passport_not_found. */
  const requirePassport = async (did: string, accountId: string): Promise<void> => {
    const row = await heldActivePassport(ctx, accountId);
    if (!row || row.did !== did) throw new ApiError('passport_not_found', `${did} holds no active passport`, { hint: 'Attestations are made by passport holders: buy one with POST /passport/request' });
  };

  const answer = (row: AttestationRow, onChain: OnChainAttestation) => ({ ...(row.snapshot as object), on_chain: onChain }) as z.infer<typeof trustSnapshotSchema>;

  app.post(
    '/api/trust/:domain/attest',
    {
      schema: {
        summary: "Write the domain's current trust snapshot hash on chain (passport contract attestDomain); answers the snapshot with on_chain",
        description:
          'DID-signed (X-Service-DID, X-Service-Challenge, X-Service-Signature); body { did } names the signer, who must hold an active passport (404) and a proven, unexpired ownership of the domain (403 trust_ownership_required; prove it with GET .../challenge?did= and POST .../verify-ownership). ' +
          'Idempotent per snapshot_hash: one chain transaction however often it is asked. A new snapshot hash takes one place of TRUST_ATTEST_DAILY_PER_DID (429 trust_quota_exceeded). ' +
          'Slower than the bounded wait: 202 request_pending whose Location is GET /api/trust/{domain}/attestations/{snapshot_hash}.',
        tags: ['trust'],
        params: trustDomainParams,
        body: attestBodySchema,
        response: { 200: trustSnapshotSchema, ...errorResponses(202, 400, 401, 403, 404, 429, 502, 503) },
      },
      preHandler: app.signedRequest(bodyDid('did')),
    },
    async (request, reply) => {
      const domain = domainOf(request.params.domain);
      const { did, accountId } = request.auth!;
      await requirePassport(did, accountId);
      await requireOwnership(sql, domain, did);
      const outcome = await attestSnapshot(ctx, app.workflowSettings, app.trustSnapshots, { domain, did, admitScan: scanAdmission(ctx, request) });
      return answer(outcome.row, outcome.onChain);
    },
  );

  app.get(
    '/api/trust/:domain/attestations/:snapshotHash',
    {
      schema: {
        summary: 'The state of an attestation (the Location of POST /api/trust/{domain}/attest when it answers 202)',
        tags: ['trust'],
        params: attestationParams,
        response: { 200: attestationStateSchema, ...errorResponses(400, 404, 503) },
      },
    },
    async (request) => {
      const domain = domainOf(request.params.domain);
      const { snapshotHash } = request.params;
      const notFound = () => new ApiError('trust_attestation_not_found', `No attestation of ${domain} with snapshot hash ${echo(snapshotHash)}`, { hint: `Attest with POST /api/trust/${domain}/attest` });
      if (!/^[0-9a-f]{64}$/.test(snapshotHash)) throw notFound();
      let row;
      try {
        row = await findAttestation(sql, snapshotHash);
      } catch {
        throw new ApiError('service_unavailable', 'The attestation records cannot be read now', { hint: 'Retry after 30 seconds' });
      }
      if (!row || row.domain !== domain) throw notFound();
      return attestationState(row) as z.infer<typeof attestationStateSchema>;
    },
  );
};

export default attestRoutes;
