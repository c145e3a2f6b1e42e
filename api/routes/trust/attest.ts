/**
 * POST /api/trust/{domain}/attest (SPEC 4.5; DESIGN.md sections 6 and 10): a passport holder, signed
 * in by DID signature (body { did }, the DID that signed), has the domain's current trust snapshot
 * written on chain and gets it back with `on_chain`.
 *
 *   1. domain validated (400 trust_domain_invalid), signature checked (401 auth_*), the signer's
 *      passport: active in the projection and held by the signer on the ledger
 *      (api/heldPassport.ts), else 404 passport_not_found (SPEC: 404 no passport);
 *   2. the current snapshot, exactly as GET /api/trust/{domain} serves it (api/trust/snapshots.ts);
 *   3. trust_attestations records it under its snapshot_hash (first attester wins), then workflow
 *      trustAttest (id trust-attest:{domain}:{snapshot_hash}) sends attestDomain(domain, hash) to
 *      the passport contract, once per snapshot hash however often it is asked;
 *   4. answer: the recorded snapshot with on_chain { chain "eip155", chain_id, contract_address,
 *      token_id (the attestation token minted by attestDomain), attested_at (block time),
 *      attested_by (the attesting DID), tx_hash, revoked false }. A snapshot already attested
 *      answers at once from PostgreSQL; a chain slower than the bounded wait answers 202
 *      request_pending (send the same request again: it attaches to the same workflow).
 * Without an EVM chain and attester key configured the route answers 503 service_unavailable.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { didString, errorResponses } from '../../schemas/common.js';
import { trustDomainParams, trustSnapshotSchema } from '../../schemas/trust.js';
import { snapshotFor } from '../../trust/snapshots.js';
import { isPending, pendingReply, startOrAttach, waitForResult } from '../../workflowCalls.js';
import { WORKFLOW_WAIT_MS } from '../../passportState.js';
import { domainOf } from './ownership.js';
import { heldActivePassport } from '../../heldPassport.js';
import { onChainOf, openAttestation, type AttestationRow, type OnChainAttestation } from '../../../db/queries/trustAttestations.js';
import { trustAttestWorkflowId, type TrustAttestInput } from '../../../workflows/trustAttest.js';

const attestBodySchema = z.strictObject({ did: didString });

const attestRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const { EVM_RPC_URL, EVM_CHAIN_ID, PASSPORT_CONTRACT_ADDRESS } = ctx.config;

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
        description: 'DID-signed (X-Service-DID, X-Service-Challenge, X-Service-Signature); body { did } names the signer, who must hold an active passport. Idempotent per snapshot_hash: one chain transaction however often it is asked.',
        tags: ['trust'],
        params: trustDomainParams,
        body: attestBodySchema,
        response: { 200: trustSnapshotSchema, ...errorResponses(400, 401, 403, 404, 429, 502, 503) },
      },
      preHandler: app.signedRequest((req) => (req.body as { did?: string } | undefined)?.did),
    },
    async (request, reply) => {
      const domain = domainOf(request.params.domain);
      const { did, accountId } = request.auth!;
      await requirePassport(did, accountId);
      if (!EVM_RPC_URL || !EVM_CHAIN_ID || !PASSPORT_CONTRACT_ADDRESS) {
        throw new ApiError('service_unavailable', 'No EVM chain is configured for attestations', { hint: 'The operator must set EVM_RPC_URL, EVM_CHAIN_ID, PASSPORT_CONTRACT_ADDRESS and EVM_ATTESTER_KEY' });
      }

      const snapshot = await snapshotFor(ctx, domain);
      const hash = snapshot.integrity.snapshot_hash;
      const { on_chain: _ignored, ...toRecord } = snapshot;
      const row = await openAttestation(sql, {
        snapshotHash: hash,
        domain,
        attestedBy: did,
        chainId: EVM_CHAIN_ID,
        contractAddress: PASSPORT_CONTRACT_ADDRESS.toLowerCase(),
        snapshot: toRecord as Record<string, unknown>,
      });
      if (row.status === 'confirmed') return answer(row, onChainOf(row));

      const workflowId = trustAttestWorkflowId(domain, hash);
      const input: TrustAttestInput = { domain, snapshotHash: hash };
      const handle = await startOrAttach(ctx, 'trustAttest', workflowId, input, { staticSummary: `attest ${domain} ${hash.slice(0, 12)}… for ${did}` });
      let result: OnChainAttestation | Awaited<ReturnType<typeof waitForResult<OnChainAttestation>>>;
      try {
        result = await waitForResult<OnChainAttestation>(handle, WORKFLOW_WAIT_MS);
      } catch (err) {
        if (err instanceof ApiError && err.code === 'execution_failed') {
          throw new ApiError('execution_failed', `The attestation of ${domain} could not be written on chain`, { hint: `Retry the request; workflow ${workflowId}` });
        }
        throw err;
      }
      if (isPending(result)) return pendingReply(reply, workflowId, `/api/trust/${encodeURIComponent(domain)}/attest`);
      return answer(row, result);
    },
  );
};

export default attestRoutes;
