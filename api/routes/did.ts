/**
 * GET /did/{did}: the W3C DID document of a ledger DID backed by an active passport (SPEC 2, 3):
 * the account key read from the mirror as the verification method (Ed25519VerificationKey2020 or
 * EcdsaSecp256k1VerificationKey2019), authentication and assertionMethod, and services for the
 * agent endpoint and the passport. 400 when the DID is not did:hedera:{network}:{accountId}; 404
 * when no active passport backs it.
 *
 * Served from memory: the passport comes from the NOTIFY-fed passport cache (api/passportCache.ts),
 * so an upgrade or revoke made through any instance shows here within a second. The serialised
 * document is kept per DID together with the passport row it was built from (a changed row means a
 * rebuild). The account key comes from the mirror: it is read when the document is first built and
 * re-checked in the background when the document is served more than KEY_RECHECK_MS after the last
 * check (the request is answered at once with the current document), so a key rotation shows within
 * about KEY_RECHECK_MS plus the key resolver's own cache time.
 */
import { z } from 'zod';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { errorResponses } from '../schemas/common.js';
import { buildDidDocument } from '../../domain/didDocument.js';
import { parseHederaDid } from '../../domain/did.js';
import { keyTypeOf } from '../../ledger/keys.js';
import type { PublicKey } from '@hashgraph/sdk';
import type { PassportRow } from '../../db/queries/passports.js';
import { activePassportOf, cacheReady, usePassportCache } from '../passportCache.js';
import { publicBase } from '../passportViews.js';
import { sendJson, serializerFor } from '../serializer.js';

const didDocumentSchema = z
  .object({
    '@context': z.array(z.string()),
    id: z.string(),
    controller: z.string(),
    verificationMethod: z.array(z.object({ id: z.string(), type: z.string(), controller: z.string(), publicKeyMultibase: z.string() })),
    authentication: z.array(z.string()),
    assertionMethod: z.array(z.string()),
    service: z.array(z.object({ id: z.string(), type: z.string(), serviceEndpoint: z.string() })),
  })
  .loose()
  .meta({ id: 'DidDocument' });

/** How long a served DID document's account key goes without a background re-check against the mirror. */
export const KEY_RECHECK_MS = 60_000;

interface DidEntry {
  /** the passport row the document was built from (the cache replaces the object on any change) */
  row: PassportRow;
  base: string;
  key: PublicKey;
  body: string;
  checkedAt: number;
  checking?: boolean;
}

const didRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const sql = ctx.sql!;
  const ledger = ctx.ledger!;
  const network = ledger.deployment.network;
  const cache = usePassportCache(app, sql);
  const serialize = serializerFor(didDocumentSchema);
  const docs = new Map<string, DidEntry>();

  const render = (did: string, row: PassportRow, base: string, key: PublicKey): string => {
    const serial = Number(row.serial);
    return serialize(
      buildDidDocument({
        did,
        keyType: keyTypeOf(key),
        publicKeyRaw: key.toBytesRaw(),
        passportUrl: `${base}/passport/${row.token_id}/${serial}`,
        endpoint: row.endpoint ?? undefined,
        tokenId: row.token_id,
        serialNumber: serial,
        tier: row.tier,
      }),
    );
  };

  /** Background re-check of a served document's key; a rotated key rebuilds it, a vanished one drops it. */
  const recheckKey = (did: string, accountId: string, entry: DidEntry) => {
    entry.checking = true;
    ledger.keys
      .resolve(accountId)
      .then((key) => {
        if (docs.get(did) !== entry) return;
        if (!key) docs.delete(did);
        else if (!key.equals(entry.key)) docs.set(did, { ...entry, key, body: render(did, entry.row, entry.base, key), checkedAt: Date.now(), checking: false });
        else entry.checkedAt = Date.now();
      })
      .catch(() => {
        entry.checkedAt = Date.now(); // mirror down: keep serving, try again after the interval
      })
      .finally(() => {
        entry.checking = false;
      });
  };

  app.get(
    '/did/:did',
    {
      schema: {
        tags: ['dids'],
        summary: 'Resolve a ledger DID to its W3C DID document (404 when no active passport backs it)',
        params: z.object({ did: z.string().max(128) }),
        response: { 200: didDocumentSchema, ...errorResponses(400, 404, 500, 503) },
      },
    },
    async (request, reply) => {
      const did = request.params.did; // fastify already decoded the path parameter
      const parsed = parseHederaDid(did);
      if (!parsed) throw new ApiError('invalid_request', `${echo(did)} is not a valid DID`, { hint: `did: expected did:hedera:${network}:<shard.realm.num>` });
      const missing = () => new ApiError('passport_not_found', `No active passport backs ${did}`, { hint: 'Request a passport with POST /passport/request' });
      if (parsed.network !== network) throw missing();
      if (!cache.isReady) await cacheReady(cache);
      const row = activePassportOf(cache, network, parsed.accountId);
      if (!row) {
        docs.delete(did);
        throw missing();
      }
      const base = publicBase(ctx, request);
      const hit = docs.get(did);
      if (hit && hit.row === row && hit.base === base) {
        if (!hit.checking && Date.now() - hit.checkedAt > KEY_RECHECK_MS) recheckKey(did, parsed.accountId, hit);
        return sendJson(reply, hit.body);
      }
      let key;
      try {
        key = await ledger.keys.resolve(parsed.accountId);
      } catch {
        throw new ApiError('service_unavailable', 'The ledger mirror is unavailable', { hint: 'Retry after 30 seconds' });
      }
      if (!key) throw missing();
      const body = render(did, row, base, key);
      if (docs.size >= 10_000) docs.clear();
      docs.set(did, { row, base, key, body, checkedAt: Date.now() });
      return sendJson(reply, body);
    },
  );
};

export default didRoutes;
