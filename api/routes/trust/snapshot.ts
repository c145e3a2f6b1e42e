/** GET /api/trust/{domain}: the domain's trust snapshot (SPEC 4.5; generation in api/trust/snapshots.ts). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { errorResponses } from '../../schemas/common.js';
import { trustDomainParams, trustSnapshotSchema } from '../../schemas/trust.js';
import { scanAdmission } from '../../trust/scanQuota.js';

const trustSnapshotRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const snapshots = app.trustSnapshots;
  app.get(
    '/api/trust/:domain',
    {
      schema: {
        tags: ['trust'],
        summary: 'Trust snapshot of a domain: agent-readiness score, evidence Merkle root, ownership, Ed25519 integrity',
        description:
          'Scans the domain (cached for TRUST_SNAPSHOT_TTL_MS). How to verify the hashes and the signature: /rules#verify. ' +
          'A cached snapshot is free; a new scan counts against TRUST_SCANS_DAILY_PER_IP and, with every subdomain of the same registrable domain, TRUST_SCANS_HOURLY_PER_SITE (429 trust_quota_exceeded). ' +
          '404 trust_domain_not_found when the domain does not resolve to a public address (one answer for both cases).',
        params: trustDomainParams,
        response: { 200: trustSnapshotSchema, ...errorResponses(400, 404, 429, 503) },
      },
    },
    async (req) => snapshots.snapshotFor(req.params.domain, ctx.sql ? { admitScan: scanAdmission(ctx, req) } : {}),
  );
};

export default trustSnapshotRoutes;
