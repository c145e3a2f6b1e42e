/** GET /api/trust/{domain}: the domain's trust snapshot (SPEC 4.5; generation in api/trust/snapshots.ts). */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { errorResponses } from '../../schemas/common.js';
import { trustDomainParams, trustSnapshotSchema } from '../../schemas/trust.js';
import { trustSnapshotsFor } from '../../trust/snapshots.js';

const trustSnapshotRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const snapshots = trustSnapshotsFor(ctx);
  app.get(
    '/api/trust/:domain',
    {
      schema: {
        tags: ['trust'],
        summary: 'Trust snapshot of a domain: agent-readiness score, evidence Merkle root, ownership, Ed25519 integrity',
        description: 'Scans the domain (cached for TRUST_SNAPSHOT_TTL_MS). How to verify the hashes and the signature: /rules#verify.',
        params: trustDomainParams,
        response: { 200: trustSnapshotSchema, ...errorResponses(400, 404, 503) },
      },
    },
    async (req) => snapshots.snapshotFor(req.params.domain),
  );
};

export default trustSnapshotRoutes;
