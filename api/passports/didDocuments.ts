/**
 * The W3C DID documents of ledger DIDs backed by an active passport (GET /did/{did}; SPEC 2, 3),
 * served from memory: the passport comes from the NOTIFY-fed passport cache (api/passports/cache.ts),
 * so an upgrade or revoke made through any instance shows within a second. The serialised document
 * is kept per DID together with the passport row it was built from (a changed row means a rebuild).
 * The account key comes from the mirror: it is read when the document is first built and re-checked
 * in the background when the document is served more than KEY_RECHECK_MS after the last check (the
 * request is answered at once with the current document), so a key rotation shows within about
 * KEY_RECHECK_MS plus the key resolver's own cache time.
 *
 * Two representations of each document are kept (W3C DID 1.0 section 6; issue 29 item 4): JSON-LD
 * (application/did+ld+json, and application/json as before), whose @context is a representation-specific
 * entry of JSON-LD, and plain JSON (application/did+json), the same entries without @context.
 */
import type { PublicKey } from '@hashgraph/sdk';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { activePassportOf, cacheReady, type PassportCache } from './cache.js';
import { buildDidDocument, type DidDocument } from '../../domain/didDocument.js';

/** A DID document as serialised: with @context (JSON-LD) or without (plain JSON). */
export type DidDocumentBody = Omit<DidDocument, '@context'> & { '@context'?: DidDocument['@context'] };
/** The serialised representations of one document. */
export interface DidRepresentations {
  /** application/did+ld+json (and application/json): with @context */
  jsonLd: string;
  /** application/did+json: without @context */
  json: string;
}
import type { HederaDid } from '@agent-passport/core/did';
import { keyTypeOf } from '@agent-passport/core/keys';
import type { PassportRow } from '../../db/queries/passports.js';
import type { AgentEntry } from '../../domain/directory.js';

/** How long a served DID document's account key goes without a background re-check against the mirror. */
export const KEY_RECHECK_MS = 60_000;

interface DidEntry {
  /** the passport row the document was built from (the cache replaces the object on any change) */
  row: PassportRow;
  /** the directory entry it was built from (likewise replaced on any change: a probe, a re-verified card) */
  agent: AgentEntry | undefined;
  base: string;
  key: PublicKey;
  body: DidRepresentations;
  checkedAt: number;
  checking?: boolean;
}

/**
 * The DID documents of one app, serialised by `serialize` (the route's response schema); `agentOf`
 * gives a DID's directory entry, whose A2A card (and its verification) the document's services name.
 */
export function didDocuments(ctx: AppContext, cache: PassportCache, serialize: (doc: DidDocumentBody) => string, agentOf: (did: string) => AgentEntry | undefined = () => undefined) {
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;
  const docs = new Map<string, DidEntry>();

  const render = (did: string, row: PassportRow, agent: AgentEntry | undefined, base: string, key: PublicKey): DidRepresentations => {
    const serial = Number(row.serial);
    const card = agent?.agentCard ? { url: agent.agentCard, cardVerified: agent.cardVerified ?? false, cardVerification: agent.cardVerification ?? 'not_checked' } : undefined;
    const doc = buildDidDocument({
      did,
      keyType: keyTypeOf(key),
      publicKeyRaw: key.toBytesRaw(),
      passportUrl: `${base}/passport/${row.token_id}/${serial}`,
      endpoint: row.endpoint ?? undefined,
      tokenId: row.token_id,
      serialNumber: serial,
      tier: row.tier,
      ...(card ? { agentCard: card } : {}),
    });
    const { '@context': _jsonLdOnly, ...plain } = doc;
    return { jsonLd: serialize(doc), json: serialize(plain) };
  };

  /** Background re-check of a served document's key; a rotated key rebuilds it, a vanished one drops it. */
  const recheckKey = (did: string, accountId: string, entry: DidEntry) => {
    entry.checking = true;
    ledger.keys
      .resolve(accountId)
      .then((key) => {
        if (docs.get(did) !== entry) return;
        if (!key) docs.delete(did);
        else if (!key.equals(entry.key)) docs.set(did, { ...entry, key, body: render(did, entry.row, entry.agent, entry.base, key), checkedAt: Date.now(), checking: false });
        else entry.checkedAt = Date.now();
      })
      .catch(() => {
        entry.checkedAt = Date.now(); // mirror down: keep serving, try again after the interval
      })
      .finally(() => {
        entry.checking = false;
      });
  };

  /**
   * The serialised document of a parsed DID, with links under `base`: 404 passport_not_found when no
   * active passport backs it, 503 when the mirror cannot give the account key.
   */
  async function documentOf(did: string, parsed: HederaDid, base: string): Promise<DidRepresentations> {
    const missing = () => new ApiError('passport_not_found', `No active passport backs ${did}`, { hint: 'Request a passport with POST /passport/request' });
    if (parsed.network !== network) throw missing();
    if (!cache.isReady) await cacheReady(cache);
    const row = activePassportOf(cache, network, parsed.accountId);
    if (!row) {
      docs.delete(did);
      throw missing();
    }
    const agent = agentOf(did);
    const hit = docs.get(did);
    if (hit && hit.row === row && hit.agent === agent && hit.base === base) {
      if (!hit.checking && Date.now() - hit.checkedAt > KEY_RECHECK_MS) recheckKey(did, parsed.accountId, hit);
      return hit.body;
    }
    let key;
    try {
      key = await ledger.keys.resolve(parsed.accountId);
    } catch {
      throw new ApiError('service_unavailable', 'The ledger mirror is unavailable', { hint: 'Retry after 30 seconds' });
    }
    if (!key) throw missing();
    const body = render(did, row, agent, base, key);
    if (docs.size >= 10_000) docs.clear();
    docs.set(did, { row, agent, base, key, body, checkedAt: Date.now() });
    return body;
  }

  return { documentOf };
}
