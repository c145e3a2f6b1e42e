/**
 * Registering an agent in the directory (SPEC 2, 4.2; DESIGN.md sections 5 and 6): the checks and
 * the orchestration behind POST /agents/register (api/routes/agents/index.ts parses, authorises by DID
 * signature, and maps the answer).
 *
 * Checks, in order: a DID or name already registered (409 agent_already_registered), the passport on
 * the ledger (missing or revoked 403 passport_not_found, held by another account 403
 * passport_not_owned), the capabilities against the passport's as written in its NFT metadata (400
 * agent_capability_invalid), the agent card through the SSRF guard (409 policy_refusal when it
 * names another DID; its signatures verified against the DID's account key, issue 29 item 5: the
 * entry's cardVerified and cardVerification). Then the DID and name are claimed in PostgreSQL (unique, so concurrent
 * requests end with one claim) and the agentRegistration workflow publishes the directory and audit
 * messages and writes the projection, whose NOTIFY brings the entry into every process's memory.
 * The request waits for the workflow at most the app's bounded wait, then throws WorkflowPending
 * (202, poll GET /agents/{did}).
 */
import type { z } from 'zod';
import type { AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import type { agentRegisterBodySchema } from '../schemas/agents.js';
import { scopedWorkflowId, type WorkflowSettings } from '../workflowSettings.js';
import { startOrAttach, waitForResult, workflowRunning, WorkflowPending, WorkflowRunFailed } from '../workflowCalls.js';
import { agentEntryOf, claimAgent, findAgent, findAgentByName, releaseAgentClaim, type AgentRow } from '../../db/queries/agents.js';
import { listPassportsByAccount, type PassportRow } from '../../db/queries/passports.js';
import { CAPABILITIES, isCapability, type Capability } from '../../domain/capabilities.js';
import {
  capabilitiesOutsidePassport,
  cardDid,
  DIRECTORY_MESSAGE_MAX_BYTES,
  directoryMessageBytes,
  normaliseCapabilities,
  normaliseSkills,
  type AgentEntry,
} from '../../domain/directory.js';
import { decodePassportMetadata } from '../../domain/passportMetadata.js';
import type { Tier } from '../../domain/tiers.js';
import { verifyAgentCard, type CardVerification } from '../../domain/agentCardSignature.js';
import { agentFetchOptions } from '../../config/index.js';
import { fetchAgentCard } from '../../net/agentCard.js';
import { keyTypeOf } from '@agent-passport/core/keys';
import { agentRegistrationContract, agentRegistrationWorkflowId, type AgentRegistrationInput } from '../../workflows/contracts/agentRegistration.js';

export type AgentRegistrationBody = z.infer<typeof agentRegisterBodySchema>;

/** What a registration ends in: the entry (its workflow still running after the bounded wait is a WorkflowPending). */
export type RegistrationOutcome = { registered: AgentEntry };

/** Where a registration is polled (the Location of its 202). */
const agentUrl = (did: string): string => `/agents/${encodeURIComponent(did)}`;

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

/** The registrations of one app. */
export function agentRegistrations(ctx: AppContext, settings: WorkflowSettings) {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;

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

  /**
   * Fetches the agent card through the SSRF guard (loopback in development only: config
   * agentFetchOptions); a card naming another DID is a conflict. Then its signatures are verified
   * against the DID's account key (domain/agentCardSignature.ts): the entry says whether and why.
   */
  const checkAgentCard = async (url: string, did: string, accountId: string): Promise<CardVerification> => {
    const fetched = await fetchAgentCard(url, agentFetchOptions(ctx.config));
    if (!fetched.ok) {
      if (fetched.status !== undefined) {
        throw new ApiError('invalid_request', `The agent card URL answered ${fetched.status}`, { hint: 'agentCard: a URL that answers 200 with the JSON agent card' });
      }
      if (fetched.reason === 'card_invalid') {
        throw new ApiError('invalid_request', fetched.detail.replace(/^the/, 'The'), { hint: 'agentCard: a URL that answers the JSON agent card (A2A)' });
      }
      throw new ApiError('invalid_request', `The agent card could not be fetched: ${fetched.detail}`, {
        hint: 'agentCard: a public http(s) URL answering JSON within 5 s and 64 KB',
      });
    }
    const named = cardDid(fetched.card);
    if (named && named !== did) {
      throw new ApiError('policy_refusal', `The agent card names ${echo(named, 128)}, not ${did}`, {
        hint: `Publish a card whose "did" (or "id") is ${did}, or leave agentCard out`,
      });
    }
    let key;
    try {
      key = await ledger.keys.resolve(accountId);
    } catch {
      throw new ApiError('service_unavailable', 'The ledger mirror cannot be read', { hint: 'Retry after 30 seconds' });
    }
    return verifyAgentCard(fetched.card, did, named, key ? { type: keyTypeOf(key), raw: key.toBytesRaw() } : null);
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

  /** Starts the registration workflow (the Temporal UI shows who registers what) and waits for its outcome. */
  const runRegistration = async (did: string, workflowId: string, input: AgentRegistrationInput): Promise<RegistrationOutcome> => {
    let handle;
    try {
      handle = await startOrAttach(ctx, agentRegistrationContract, workflowId, input, {
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
      r = await waitForResult(handle, settings.workflowWaitMs, agentUrl(did));
    } catch (err) {
      if (err instanceof WorkflowRunFailed) {
        throw new ApiError('execution_failed', 'The registration could not be written to the directory topic', { hint: 'Retry the request; nothing was registered' });
      }
      throw err;
    }
    const row = await findAgent(sql, did);
    return { registered: row ? agentEntryOf(row).entry : { ...r.message, active: true } };
  };

  /** Registers `body` for the signer (`did`, `accountId`): the checks, the claim, the workflow. */
  async function register(signer: { did: string; accountId: string }, body: AgentRegistrationBody): Promise<RegistrationOutcome> {
    const { did, accountId } = signer;
    const workflowId = scopedWorkflowId(settings, agentRegistrationWorkflowId(did));

    // 409 first: cheap, and the answer does not depend on the passport
    const existing = await findAgent(sql, did);
    if (existing && (await claimState(existing)) !== 'released') {
      // the same DID's registration is still running (e.g. a retry after 202): poll it
      if (existing.status === 'pending') throw new WorkflowPending(existing.workflow_id ?? workflowId, agentUrl(did));
      throw alreadyRegistered('did', did);
    }
    const sameName = await findAgentByName(sql, body.name);
    if (sameName && (await claimState(sameName)) !== 'released') throw alreadyRegistered('name', body.name);

    const passport = await passportOnLedger(did, accountId);
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
    const card = body.agentCard ? await checkAgentCard(body.agentCard, did, accountId) : undefined;

    const capabilities = normaliseCapabilities(body.capabilities as Capability[]);
    const skills = body.skills ? normaliseSkills(body.skills) : undefined;
    // what the directory message, the claim and the workflow input all carry
    const entry = {
      did,
      accountId,
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
    const claim = await claimAgent(sql, { ...entry, network, workflowId, ...(card ? { card } : {}) });
    if (!claim.claimed) throw alreadyRegistered(claim.conflict, claim.conflict === 'did' ? did : body.name);

    const input: AgentRegistrationInput = { ...entry, network, ...(settings.timings ? { timings: settings.timings } : {}) };
    return runRegistration(did, workflowId, input);
  }

  return { register };
}

export type AgentRegistrations = ReturnType<typeof agentRegistrations>;
