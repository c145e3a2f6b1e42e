/**
 * Fetching an agent's A2A card (issue 29 item 5): through the SSRF guard (safeFetch.ts), 2xx JSON
 * object only. Used by the registration (api/agents/registration.ts) and the liveness probe
 * (activities/web/directoryProbe.ts), so both read a card the same way.
 */
import { safeFetch, SafeFetchError, type SafeFetchOptions } from './safeFetch.js';

export type AgentCardFetch =
  | { ok: true; card: Record<string, unknown> }
  /** unreachable: no answer, or not 2xx (`status`); invalid: not a JSON object. `detail` is safe to show. */
  | { ok: false; reason: 'card_unreachable' | 'card_invalid'; detail: string; status?: number };

export async function fetchAgentCard(url: string, options: SafeFetchOptions): Promise<AgentCardFetch> {
  let res;
  try {
    res = await safeFetch(url, options);
  } catch (err) {
    return { ok: false, reason: 'card_unreachable', detail: err instanceof SafeFetchError ? err.message : 'it could not be fetched' };
  }
  if (res.status < 200 || res.status > 299) return { ok: false, reason: 'card_unreachable', detail: `the URL answered ${res.status}`, status: res.status };
  let card: unknown;
  try {
    card = JSON.parse(res.body.toString('utf8'));
  } catch {
    return { ok: false, reason: 'card_invalid', detail: 'the agent card is not JSON' };
  }
  if (!card || typeof card !== 'object' || Array.isArray(card)) return { ok: false, reason: 'card_invalid', detail: 'the agent card is not a JSON object' };
  return { ok: true, card: card as Record<string, unknown> };
}
