/**
 * Activities of the directory's liveness probe (workflows/directoryProbe.ts; issue 29 items 5 and 6).
 *
 *   listProbeDue  the active entries (of the worker's network) not probed for `everyMs` (never probed first), at most `batch`;
 *                 both held to the worker's configuration (the scheduled input carries no authority)
 *   probeAgent    the entry's agent card, when it names one, through the SSRF guard (net/agentCard.ts):
 *                 answering 2xx makes the entry online and the card is verified again against the
 *                 DID's account key (domain/agentCardSignature.ts: a changed card or a rotated key
 *                 shows at once); otherwise its endpoint (any answer below 500 counts). Then the
 *                 projection (online, lastSeenAt, stale, the card's verification) with its NOTIFY.
 *
 * Agents' URLs are fetched as the registration fetches them (config agentFetchOptions: loopback in
 * development only). Endpoint bodies are not read beyond 16 KB (an answer is all a probe needs).
 */
import type { Sql } from 'postgres';
import { listProbeDue, recordProbe } from '../../db/queries/agents.js';
import { cardDid } from '../../domain/directory.js';
import { verifyAgentCard, type CardKey, type CardVerification } from '../../domain/agentCardSignature.js';
import { fetchAgentCard } from '../../net/agentCard.js';
import { safeFetch } from '../../net/safeFetch.js';
import type { ProbeOutcome, ProbeResult, ProbeTarget } from '../../workflows/contracts/directoryProbe.js';

export interface DirectoryProbeBounds {
  /** DIRECTORY_PROBE_EVERY_S in ms: no entry is probed more often, whatever the input says */
  everyMs: number;
  /** DIRECTORY_PROBE_BATCH: no pass probes more */
  batchMax: number;
  /** DIRECTORY_STALE_AFTER_S in ms */
  staleAfterMs: number;
}

export interface DirectoryProbeDeps {
  sql: Sql;
  /** the ledger network whose entries this worker probes (its deployment's) */
  network: string;
  bounds: DirectoryProbeBounds;
  /** how agents' URLs are fetched (config agentFetchOptions) */
  fetch: { allowPrivate: boolean; allowLoopback: boolean };
  /** the DID account's key (the mirror); without it (no ledger) cards are not verified again */
  accountKey?: (accountId: string) => Promise<CardKey | null>;
  /** counts each probe by outcome (the worker's metrics: telemetry/metrics.ts) */
  onProbe?: (outcome: ProbeOutcome) => void;
}

const ENDPOINT_MAX_BYTES = 16 * 1024;

export function createDirectoryProbeActivities(deps: DirectoryProbeDeps) {
  const { sql, bounds } = deps;

  /** The endpoint answered (any status below 500; a body over the cap is an answer too). */
  const endpointAnswers = async (url: string): Promise<boolean> => {
    try {
      const res = await safeFetch(url, { ...deps.fetch, maxBytes: ENDPOINT_MAX_BYTES, accept: '*/*' });
      return res.status < 500;
    } catch (err) {
      return (err as { reason?: string }).reason === 'too_large';
    }
  };

  const verifyCard = async (target: ProbeTarget, card: Record<string, unknown>): Promise<CardVerification | undefined> => {
    if (!deps.accountKey) return undefined;
    const key = await deps.accountKey(target.accountId); // a mirror failure fails the activity: retried
    return verifyAgentCard(card, target.did, cardDid(card), key);
  };

  return {
    async listProbeDue(input: { everyMs: number; batch: number }): Promise<ProbeTarget[]> {
      const everyMs = Math.max(input.everyMs, bounds.everyMs);
      const batch = Math.max(1, Math.min(input.batch, bounds.batchMax));
      return (await listProbeDue(sql, deps.network, everyMs, batch)).map((r) => ({
        did: r.did,
        accountId: r.account_id,
        endpoint: r.endpoint,
        ...(r.agent_card ? { agentCard: r.agent_card } : {}),
      }));
    },

    async probeAgent(target: ProbeTarget): Promise<ProbeResult> {
      let outcome: ProbeOutcome = 'offline';
      let card: CardVerification | undefined;
      if (target.agentCard) {
        const fetched = await fetchAgentCard(target.agentCard, deps.fetch);
        if (fetched.ok) {
          outcome = 'card';
          card = await verifyCard(target, fetched.card);
        } else if (fetched.reason === 'card_invalid') {
          outcome = 'card'; // it answered: online, and what it serves is not a card
          card = { cardVerified: false, cardVerification: 'card_invalid' };
        }
      }
      if (outcome === 'offline' && (await endpointAnswers(target.endpoint))) outcome = 'endpoint';
      const online = outcome !== 'offline';
      await recordProbe(sql, { did: target.did, online, staleAfterMs: bounds.staleAfterMs, ...(card ? { card } : {}) });
      deps.onProbe?.(outcome);
      return { did: target.did, outcome, online, ...(card ?? {}) };
    },
  };
}

export type DirectoryProbeActivities = ReturnType<typeof createDirectoryProbeActivities>;
