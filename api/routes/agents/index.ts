/**
 * The agent directory (SPEC 2, 4.2, 4.3; DESIGN.md sections 5, 6 and 10):
 *   POST /agents/register      DID-signed -> checks -> claim -> agentRegistration workflow
 *   GET  /agents               filtered, paginated, from this process's memory
 *   GET  /agents/{did}         one entry from memory (404 agent_not_found)
 *   POST /admin/rebuild-cache  admin token -> directoryRebuild workflow (replays the directory topic)
 *
 * Registration checks, in order: the body (strict), the DID signature (the DID in the body must be
 * the signer), a DID or name already registered (409 agent_already_registered), the passport on
 * the ledger (missing or revoked 403 passport_not_found, held by another account 403
 * passport_not_owned), the capabilities against the passport's as written in its NFT metadata (400
 * agent_capability_invalid), the agent card through the SSRF guard (409 policy_refusal when it
 * names another DID). Then the DID and name are claimed in PostgreSQL (unique, so concurrent
 * requests end with one claim) and the workflow publishes the directory and audit messages and
 * writes the projection, whose NOTIFY brings the entry into every process's memory.
 */
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../../context.js';
import { ApiError, echo } from '../../errors.js';
import { requireAdmin } from '../../plugins/adminAuth.js';
import { errorResponses } from '../../schemas/common.js';
import { agentDidParams, agentEntrySchema, agentListSchema, agentRegisterBodySchema, agentsQuerySchema, rebuildResultSchema } from '../../schemas/agents.js';
import { passportState, scopedWorkflowId } from '../../passportState.js';
import { isPending, pendingReply, startOrAttach, waitForResult, workflowRunning, WorkflowRunFailed } from '../../workflowCalls.js';
import { sendJson, serializerFor } from '../../serializer.js';
import { AgentDirectory, setAgentDirectory } from './directory.js';
import { agentEntryOf, claimAgent, findAgent, findAgentByName, releaseAgentClaim, type AgentRow } from '../../../db/queries/agents.js';
import { listPassportsByAccount, type PassportRow } from '../../../db/queries/passports.js';
import { CAPABILITIES, isCapability, type Capability } from '../../../domain/capabilities.js';
import {
  capabilitiesOutsidePassport,
  cardDid,
  DIRECTORY_MESSAGE_MAX_BYTES,
  directoryMessageBytes,
  normaliseCapabilities,
  normaliseSkills,
  type AgentEntry,
} from '../../../domain/directory.js';
import { decodePassportMetadata } from '../../../domain/passportMetadata.js';
import type { Tier } from '../../../domain/tiers.js';
import { safeFetch, SafeFetchError } from '../../../net/safeFetch.js';
import { agentRegistrationWorkflowId, type AgentRegistrationInput, type AgentRegistrationResult } from '../../../workflows/agentRegistration.js';
import { DIRECTORY_REBUILD_WORKFLOW_ID, type DirectoryRebuildInput, type DirectoryRebuildResult } from '../../../workflows/directoryRebuild.js';

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

function withLinks(e: AgentEntry) {
  return { ...e, _links: agentLinks(e) };
}

function alreadyRegistered(what: 'did' | 'name', value: string): ApiError {
  return new ApiError('agent_already_registered', what === 'did' ? `Agent ${echo(value)} is already registered` : `The name ${echo(value)} is already taken`, {
    hint: what === 'did' ? `See GET /agents/${value}` : 'Choose another name (names are unique regardless of case)',
  });
}

/** A pending claim whose workflow is not running is released only once it is this old. */
const STALE_CLAIM_MS = 60_000;

interface PassportOnLedger {
  tokenId: string;
  serial: number;
  tier: Tier;
  capabilities: Capability[];
}

const agentsRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;
  const state = passportState(ctx);
  const directory = new AgentDirectory(sql, (err) => app.log.warn({ err }, 'agent directory cache'));
  setAgentDirectory(ctx, directory); // GET /api/search and GET /feed read it
  app.addHook('onClose', async () => {
    await directory.close();
  });

  // Entries are immutable values of the cache (a change replaces the object), so each is
  // serialised (with its _links) once, the first time it is served.
  const serializeEntry = serializerFor(agentEntrySchema);
  const serialised = new WeakMap<AgentEntry, string>();
  const entryJson = (e: AgentEntry): string => {
    let json = serialised.get(e);
    if (json === undefined) serialised.set(e, (json = serializeEntry(withLinks(e))));
    return json;
  };

  const ready = async () => {
    try {
      await directory.ready();
    } catch {
      throw new ApiError('service_unavailable', 'The directory is still loading', { hint: 'Retry after 30 seconds' });
    }
  };

  /**
   * The caller's passport as the ledger shows it: the projection names the passport of the DID, the
   * mirror says who holds it and what its metadata (tier, capabilities) is.
   */
  const passportOnLedger = async (did: string, accountId: string): Promise<PassportOnLedger> => {
    const rows = (await listPassportsByAccount(sql, accountId)).filter((p) => p.network === network && p.did === did);
    const active: PassportRow | undefined = rows.find((p) => p.revoked_at === null);
    if (!active) {
      const revoked = rows[0];
      throw new ApiError('passport_not_found', revoked ? `The passport of ${did} (${revoked.token_id}/${revoked.serial}) is revoked` : `${did} has no passport`, {
        status: 403,
        hint: 'Register with an active passport: buy one with POST /passport/request',
      });
    }
    const serial = Number(active.serial);
    const nft = await ledger.mirror.getNft(active.token_id, serial).catch(() => {
      throw new ApiError('service_unavailable', 'The ledger mirror cannot be read', { hint: 'Retry after 30 seconds' });
    });
    const holder = nft && !nft.deleted ? nft.account_id : null;
    if (!holder) {
      throw new ApiError('passport_not_found', `Passport ${active.token_id}/${serial} is no longer on the ledger (wiped or burned)`, {
        status: 403,
        hint: 'Register with an active passport: buy one with POST /passport/request',
      });
    }
    if (holder !== accountId) {
      throw new ApiError('passport_not_owned', `Passport ${active.token_id}/${serial} is held by ${holder}, not by ${accountId}`, {
        hint: `Sign with the account that holds ${active.token_id}/${serial}`,
      });
    }
    const meta = decodePassportMetadata(Buffer.from(nft!.metadata ?? '', 'base64'));
    return {
      tokenId: active.token_id,
      serial,
      tier: (meta?.tier ?? active.tier) as Tier,
      capabilities: (meta?.capabilities ?? active.capabilities) as Capability[],
    };
  };

  /** Fetches the agent card through the SSRF guard; a card naming another DID is a conflict. */
  const checkAgentCard = async (url: string, did: string): Promise<void> => {
    let res;
    try {
      res = await safeFetch(url, { allowPrivate: ctx.config.TRUST_ALLOW_PRIVATE });
    } catch (err) {
      const reason = err instanceof SafeFetchError ? err.message : 'it could not be fetched';
      throw new ApiError('invalid_request', `The agent card could not be fetched: ${reason}`, {
        hint: 'agentCard: a public http(s) URL answering JSON within 5 s and 64 KB',
      });
    }
    if (res.status < 200 || res.status > 299) {
      throw new ApiError('invalid_request', `The agent card URL answered ${res.status}`, { hint: 'agentCard: a URL that answers 200 with the JSON agent card' });
    }
    let card: unknown;
    try {
      card = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw new ApiError('invalid_request', 'The agent card is not JSON', { hint: 'agentCard: a URL that answers the JSON agent card (A2A)' });
    }
    if (!card || typeof card !== 'object' || Array.isArray(card)) {
      throw new ApiError('invalid_request', 'The agent card is not a JSON object', { hint: 'agentCard: a URL that answers the JSON agent card (A2A)' });
    }
    const named = cardDid(card);
    if (named && named !== did) {
      throw new ApiError('policy_refusal', `The agent card names ${echo(named, 128)}, not ${did}`, {
        hint: `Publish a card whose "did" (or "id") is ${did}, or leave agentCard out`,
      });
    }
  };

  /**
   * A claim found in the way: 'held' (registered, or pending with its workflow running or just
   * claimed), or 'released' when it was pending and its workflow is not running (the API died
   * between the claim and the start, or the workflow failed before it released the claim).
   */
  const claimState = async (row: AgentRow): Promise<'held' | 'released'> => {
    if (row.status !== 'pending' || !row.workflow_id) return 'held';
    if ((await workflowRunning(ctx, row.workflow_id)) !== false) return 'held';
    return (await releaseAgentClaim(sql, row.did, STALE_CLAIM_MS)) ? 'released' : 'held';
  };

  /** Starts the registration workflow (the Temporal UI shows who registers what) and answers its outcome. */
  const runRegistration = async (reply: FastifyReply, did: string, workflowId: string, input: AgentRegistrationInput) => {
    let handle;
    try {
      handle = await startOrAttach(ctx, 'agentRegistration', workflowId, input, {
        staticSummary: `Register agent "${input.name}" (${did})`,
        staticDetails: `${input.tier} passport ${input.tokenId}/${input.serial}; capabilities ${input.capabilities.join(', ')}; endpoint ${input.endpoint}`,
      });
    } catch (err) {
      // nothing started: free the DID and name at once so a retry is not held up by the claim
      await releaseAgentClaim(sql, did).catch(() => undefined);
      throw err;
    }
    let r;
    try {
      r = await waitForResult<AgentRegistrationResult>(handle, state.workflowWaitMs);
    } catch (err) {
      if (err instanceof WorkflowRunFailed) {
        throw new ApiError('execution_failed', 'The registration could not be written to the directory topic', { hint: 'Retry the request; nothing was registered' });
      }
      throw err;
    }
    if (isPending(r)) return pendingReply(reply, handle.workflowId, `/agents/${encodeURIComponent(did)}`);
    const row = await findAgent(sql, did);
    return withLinks(row ? agentEntryOf(row).entry : { ...r.message, active: true });
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
      preHandler: app.signedRequest((r) => (r.body as { did?: string }).did),
    },
    async (request, reply) => {
      const body = request.body;
      const auth = request.auth!;
      const did = auth.did;
      const workflowId = scopedWorkflowId(state, agentRegistrationWorkflowId(did));

      // 409 first: cheap, and the answer does not depend on the passport
      const existing = await findAgent(sql, did);
      if (existing && (await claimState(existing)) !== 'released') {
        // the same DID's registration is still running (e.g. a retry after 202): poll it
        if (existing.status === 'pending') return pendingReply(reply, existing.workflow_id ?? workflowId, `/agents/${encodeURIComponent(did)}`);
        throw alreadyRegistered('did', did);
      }
      const sameName = await findAgentByName(sql, body.name);
      if (sameName && (await claimState(sameName)) !== 'released') throw alreadyRegistered('name', body.name);

      const passport = await passportOnLedger(did, auth.accountId);
      const unknown = body.capabilities.filter((c) => !isCapability(c));
      if (unknown.length) {
        throw new ApiError('agent_capability_invalid', `Unknown capabilities: ${unknown.map((c) => echo(c)).join(', ')}`, { hint: `Use values from ${CAPABILITIES.join(', ')}` });
      }
      const outside = capabilitiesOutsidePassport(body.capabilities, passport.capabilities);
      if (outside.length) {
        throw new ApiError('agent_capability_invalid', `Capabilities ${outside.join(', ')} are not in passport ${passport.tokenId}/${passport.serial}`, {
          hint: `capabilities: the passport grants ${passport.capabilities.join(', ') || 'none'}`,
        });
      }
      if (body.agentCard) await checkAgentCard(body.agentCard, did);

      const capabilities = normaliseCapabilities(body.capabilities as Capability[]);
      const skills = body.skills ? normaliseSkills(body.skills) : undefined;
      // what the directory message, the claim and the workflow input all carry
      const entry = {
        did,
        accountId: auth.accountId,
        tokenId: passport.tokenId,
        serial: passport.serial,
        name: body.name,
        capabilities,
        endpoint: body.endpoint,
        tier: passport.tier,
        ...(skills?.length ? { skills } : {}),
        ...(body.description ? { description: body.description } : {}),
        ...(body.agentCard ? { agentCard: body.agentCard } : {}),
      };
      const size = directoryMessageBytes({ v: 1, type: 'agent.registered', ...entry });
      if (size > DIRECTORY_MESSAGE_MAX_BYTES) {
        throw new ApiError('invalid_request', `The directory message would be ${size} bytes; one topic message holds ${DIRECTORY_MESSAGE_MAX_BYTES}`, {
          hint: 'description, skills: shorten them (or the endpoint and agentCard URLs) so the registration fits in 1024 bytes of JSON',
        });
      }
      const claim = await claimAgent(sql, { ...entry, network, workflowId });
      if (!claim.claimed) throw alreadyRegistered(claim.conflict, claim.conflict === 'did' ? did : body.name);

      const input: AgentRegistrationInput = { ...entry, network, ...(state.timings ? { timings: state.timings } : {}) };
      return runRegistration(reply, did, workflowId, input);
    },
  );

  app.get(
    '/agents',
    {
      schema: {
        tags: ['agents'],
        summary: 'The agent directory, oldest registration first, from memory (filters: capability, skill, name substring)',
        querystring: agentsQuerySchema,
        response: { 200: agentListSchema, ...errorResponses(400, 503) },
      },
    },
    async (request, reply) => {
      await ready();
      const q = request.query;
      const { agents, total } = directory.query({ capability: q.capability, skill: q.skill, name: q.name, limit: q.limit, offset: q.offset });
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
    async (_request, reply) => {
      const workflowId = scopedWorkflowId(state, DIRECTORY_REBUILD_WORKFLOW_ID);
      const input: DirectoryRebuildInput = state.timings ? { timings: state.timings } : {};
      const handle = await startOrAttach(ctx, 'directoryRebuild', workflowId, input, { staticSummary: 'Rebuild the agent directory from the directory topic' });
      const r = await waitForResult<DirectoryRebuildResult>(handle, state.workflowWaitMs);
      if (isPending(r)) return pendingReply(reply, workflowId, '/agents');
      const { status: _status, ...counts } = r;
      return { rebuilt: true as const, workflowId, ...counts };
    },
  );
};

export default agentsRoutes;
