/**
 * The agent directory (SPEC 2, 4.2, 4.3; DESIGN.md sections 5, 6 and 10), HTTP only:
 *   POST /agents/register      DID-signed -> api/agents/registration.ts (checks, claim, agentRegistration workflow)
 *   GET  /agents               filtered, paginated, from this process's memory (api/agents/directory.ts)
 *   GET  /agents/{did}         one entry from memory (404 agent_not_found)
 *   POST /admin/rebuild-cache  admin token -> api/agents/rebuild.ts (directoryRebuild workflow, replays the directory topic)
 *
 * Each entry carries the agent's marketplace record (api/market/records.ts, NOTIFY-fed too).
 */
import { bodyDid } from '../../auth/bodyDid.js';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { ApiError, echo } from '../../errors.js';
import { requireAdmin } from '../../plugins/adminAuth.js';
import { errorResponses } from '../../schemas/common.js';
import { agentDidParams, agentEntrySchema, agentListSchema, agentRegisterBodySchema, agentsQuerySchema, rebuildResultSchema } from '../../schemas/agents.js';
import { sendJson, serializerFor } from '../../serializer.js';
import { agentRegistrations } from '../../agents/registration.js';
import { rebuildDirectory } from '../../agents/rebuild.js';
import { useMarketRecords } from '../../market/records.js';
import type { MarketRecordView } from '../../../domain/marketRecord.js';
import type { AgentEntry } from '../../../domain/directory.js';

export function agentLinks(e: Pick<AgentEntry, 'did' | 'tokenId' | 'serial'>) {
  const did = encodeURIComponent(e.did);
  return {
    self: { href: `/agents/${did}` },
    passport: { href: `/passport/${e.tokenId}/${e.serial}` },
    did: { href: `/did/${e.did}` },
    audit: { href: `/audit/${e.tokenId}/${e.serial}` },
    inbox: { href: `/a2a/inbox?did=${did}` },
  };
}

function withLinks(e: AgentEntry, marketplace?: MarketRecordView) {
  return { ...e, ...(marketplace ? { marketplace } : {}), _links: agentLinks(e) };
}

const agentsRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const directory = app.agentDirectory;
  const registrations = agentRegistrations(ctx, app.workflowSettings);

  // the marketplace record of each entry (issue 19 item 7), in memory too (NOTIFY-fed)
  const records = useMarketRecords(app, sql);

  // Entries and records are immutable values of their caches (a change replaces the object), so each
  // entry is serialised (with its record and _links) once, and again only when either changed.
  const serializeEntry = serializerFor(agentEntrySchema);
  const serialised = new WeakMap<AgentEntry, { record: MarketRecordView; json: string }>();
  const entryJson = (e: AgentEntry): string => {
    const record = records.viewOf(e.did);
    let kept = serialised.get(e);
    if (kept === undefined || kept.record !== record) serialised.set(e, (kept = { record, json: serializeEntry(withLinks(e, record)) }));
    return kept.json;
  };

  const ready = async () => {
    try {
      await Promise.all([directory.ready(), records.ready()]);
    } catch {
      throw new ApiError('service_unavailable', 'The directory is still loading', { hint: 'Retry after 30 seconds' });
    }
  };

  app.post(
    '/agents/register',
    {
      schema: {
        tags: ['agents'],
        summary: 'Register an agent in the directory (DID signature headers; active passport on the ledger)',
        description:
          'Writes an agent.registered message to the directory topic and to the audit topic, then the entry is served by GET /agents on every instance. ' +
          'If the workflow takes longer than the bounded wait the answer is 202 request_pending with a Location to poll (GET /agents/{did}).',
        body: agentRegisterBodySchema,
        response: { 200: agentEntrySchema, ...errorResponses(202, 400, 401, 403, 409, 500, 502, 503) },
      },
      preHandler: app.signedRequest(bodyDid('did')),
    },
    async (request) => {
      const { did, accountId } = request.auth!;
      const outcome = await registrations.register({ did, accountId }, request.body);
      return withLinks(outcome.registered, records.viewOf(did));
    },
  );

  app.get(
    '/agents',
    {
      schema: {
        tags: ['agents'],
        summary: 'The agent directory, oldest registration first, from memory (filters: capability, skill, name substring, online)',
        querystring: agentsQuerySchema,
        response: { 200: agentListSchema, ...errorResponses(400, 503) },
      },
    },
    async (request, reply) => {
      await ready();
      const q = request.query;
      const { agents, total } = directory.query({ capability: q.capability, skill: q.skill, name: q.name, online: q.online, limit: q.limit, offset: q.offset });
      // the list's shape (agentListSchema) around entries serialised once each
      return sendJson(reply, `{"agents":[${agents.map(entryJson).join(',')}],"count":${agents.length},"total":${total},"limit":${q.limit},"offset":${q.offset}}`);
    },
  );

  app.get(
    '/agents/:did',
    {
      schema: {
        tags: ['agents'],
        summary: 'One directory entry, from memory',
        params: agentDidParams,
        response: { 200: agentEntrySchema, ...errorResponses(400, 404, 503) },
      },
    },
    async (request, reply) => {
      await ready();
      const entry = directory.get(request.params.did);
      if (!entry) {
        throw new ApiError('agent_not_found', `No agent ${echo(request.params.did)} in the directory`, { hint: 'Check the DID (GET /agents lists the directory)' });
      }
      return sendJson(reply, entryJson(entry));
    },
  );

  app.post(
    '/admin/rebuild-cache',
    {
      onRequest: requireAdmin(ctx.config.ADMIN_TOKEN_SHA256),
      schema: {
        tags: ['admin'],
        summary: 'Rebuild the directory from the directory topic (sequence 1 onwards) into the projection and every instance\'s memory (admin token)',
        description: 'A second call while a rebuild runs attaches to it. Answers 202 request_pending when the rebuild outlasts the bounded wait.',
        response: { 200: rebuildResultSchema, ...errorResponses(202, 401, 403, 500, 502, 503) },
      },
    },
    async () => {
      const r = await rebuildDirectory(ctx, app.workflowSettings);
      return { rebuilt: true as const, workflowId: r.workflowId, ...r.counts };
    },
  );
};

export default agentsRoutes;
