/**
 * Who a request's Bearer credential names (SPEC 5 "Bearer api key"; DESIGN.md section 10 "Registry
 * keys and OAuth"): a registry key (`Bearer apk_...`) or an access token of POST /oauth/token
 * (`Bearer <EdDSA JWT, typ at+jwt>`). Used by the keyed rate limit (every request, once) and by
 * /api/v1/agents/me.
 *
 *  - no Authorization, or a Bearer value that is neither form (e.g. the admin token): null, the
 *    request is anonymous;
 *  - a key or token that is malformed, unknown, expired or badly signed: 401 agent_key_invalid;
 *    of a revoked registration: 401 agent_key_revoked. Never silently the anonymous quota.
 *
 * Keys are looked up by sha256 in a memory cache of the registry_keys rows (db/liveCache.ts, fed
 * by NOTIFY registry_key_changed), so a revoke applies on every instance within a second; a key the
 * cache does not know yet (registered on another instance a moment ago) is read from PostgreSQL.
 * The stored and computed digests are compared in constant time. The result is memoised per request.
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Sql } from 'postgres';
import { decodeProtectedHeader, exportJWK, jwtVerify, SignJWT, errors as joseErrors, type JWK } from 'jose';
import type { Config } from '../../config/index.js';
import { shareLiveCache, type LiveCache } from '../../db/liveCache.js';
import { CHANNELS } from '../../db/notify.js';
import { findRegistryKey, findRegistryKeyByHash, listAllRegistryKeys, type RegistryKeyRow } from '../../db/queries/registryKeys.js';
import { isApiKey, KEY_PREFIX, looksLikeApiKey } from '../../domain/registry.js';
import { ApiError } from '../errors.js';
import { bearerToken } from '../plugins/adminAuth.js';

/** The JWT header type of our access tokens (RFC 9068). */
export const ACCESS_TOKEN_TYP = 'at+jwt';
const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/;
/** Made-up key digests remembered per process (see registryClientsFor). */
const UNKNOWN_MAX = 10_000;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function keyDigest(key: string): Buffer {
  return createHash('sha256').update(key, 'utf8').digest();
}

// ---------------------------------------------------------------- token signer

export interface OAuthSigner {
  kid: string;
  /** the public key as a JWK (the jwks_uri document) */
  publicJwk: JWK;
  ephemeral: boolean;
  issue(claims: { issuer: string; clientId: string; scope: string; ttlSeconds: number }): Promise<{ token: string; expiresIn: number }>;
  /** verified claims; throws jose errors */
  verify(token: string, issuer: string): Promise<{ sub: string }>;
}

async function makeSigner(config: Pick<Config, 'OAUTH_SIGNING_KEY' | 'OAUTH_SIGNING_KEY_ID'>): Promise<OAuthSigner> {
  const text = config.OAUTH_SIGNING_KEY;
  const privateKey: KeyObject = text
    ? text.includes('-----BEGIN')
      ? createPrivateKey(text)
      : createPrivateKey({ key: Buffer.from(text, 'hex'), format: 'der', type: 'pkcs8' })
    : generateKeyPairSync('ed25519').privateKey;
  const publicKey = createPublicKey(privateKey);
  const jwk = await exportJWK(publicKey);
  const kid = config.OAUTH_SIGNING_KEY_ID ?? `oauth-${createHash('sha256').update(jwk.x!).digest('hex').slice(0, 16)}`;
  return {
    kid,
    publicJwk: { kty: jwk.kty!, crv: jwk.crv!, x: jwk.x!, kid, alg: 'EdDSA', use: 'sig' },
    ephemeral: !text,
    async issue({ issuer, clientId, scope, ttlSeconds }) {
      const token = await new SignJWT({ client_id: clientId, scope })
        .setProtectedHeader({ alg: 'EdDSA', kid, typ: ACCESS_TOKEN_TYP })
        .setIssuer(issuer)
        .setAudience(issuer)
        .setSubject(clientId)
        .setIssuedAt()
        .setExpirationTime(`${ttlSeconds}s`)
        .setJti(randomUUID())
        .sign(privateKey);
      return { token, expiresIn: ttlSeconds };
    },
    async verify(token, issuer) {
      const { payload } = await jwtVerify(token, publicKey, { algorithms: ['EdDSA'], typ: ACCESS_TOKEN_TYP, issuer, audience: issuer, requiredClaims: ['sub', 'exp', 'iat'] });
      return { sub: payload.sub! };
    },
  };
}

// ---------------------------------------------------------------- key cache

export type RegistryKeyCache = LiveCache<RegistryKeyRow, 'byHash'>;

function useRegistryKeyCache(app: FastifyInstance, sql: Sql): RegistryKeyCache {
  const { cache, release } = shareLiveCache(
    sql,
    {
      name: 'registry keys',
      channel: CHANNELS.registryKey,
      keyOf: (r: RegistryKeyRow) => r.id,
      keyOfPayload: (p) => (UUID.test(p) ? p : null),
      loadAll: listAllRegistryKeys,
      loadKey: findRegistryKey,
      indexes: { byHash: (r: RegistryKeyRow) => r.key_sha256.toString('hex') },
    },
    { onError: (err) => app.log.warn({ err }, 'registry key cache: load failed, retrying') },
  );
  app.addHook('onClose', release);
  return cache;
}

// ---------------------------------------------------------------- resolution

export interface RegistryClients {
  /** The registration a request's Bearer credential names; null when it carries none of ours; throws the 401s. */
  identify(request: FastifyRequest): Promise<RegistryKeyRow | null>;
  /** Like identify, but a request without a key or token is refused too (401 agent_key_invalid). */
  require(request: FastifyRequest): Promise<RegistryKeyRow>;
  /** Read-your-writes after this process changed a registration. */
  changed(id: string): Promise<void>;
  /** The registration behind a client id (the OAuth token endpoint). */
  byId(id: string): Promise<RegistryKeyRow | null>;
  /** The registration of a key (constant-time digest check), null when unknown. */
  byKey(key: string): Promise<RegistryKeyRow | null>;
  /** The app's one access-token signer (so the token route, the JWKS and the verifier agree). */
  signer(): Promise<OAuthSigner>;
}

function invalid(message: string, hint = 'Send Authorization: Bearer apk_<key> as issued by POST /api/v1/agents/register, or an access token of POST /oauth/token'): ApiError {
  return new ApiError('agent_key_invalid', message, { hint });
}

function usable(row: RegistryKeyRow, what: string): RegistryKeyRow {
  if (row.status === 'revoked') {
    throw new ApiError('agent_key_revoked', `This ${what} was revoked`, { hint: 'Register again with POST /api/v1/agents/register' });
  }
  return row;
}

export function registryClientsFor(app: FastifyInstance, deps: { sql: Sql; config: Config; issuerOf: (request: FastifyRequest) => string }): RegistryClients {
  const { sql, config } = deps;
  const cache = useRegistryKeyCache(app, sql);
  let signer: Promise<OAuthSigner> | undefined;
  const signerOf = () => (signer ??= makeSigner(config));
  const memo = new WeakMap<FastifyRequest, Promise<RegistryKeyRow | null>>();
  // Digests PostgreSQL did not know either, so a flood of made-up keys costs no query each. Safe to
  // remember: a key is only ever shown after its row committed, and a row reaching the cache drops
  // its digest from here. Bounded: cleared when full.
  const unknown = new Set<string>();
  const forget = cache.onChange((_id, _before, after) => {
    if (after) unknown.delete(after.key_sha256.toString('hex'));
  });
  app.addHook('onClose', async () => {
    forget();
  });

  async function byKey(key: string): Promise<RegistryKeyRow | null> {
    if (!isApiKey(key)) return null;
    const digest = keyDigest(key);
    const hex = digest.toString('hex');
    let row = cache.isReady ? cache.lookup('byHash', hex)[0] : undefined;
    if (!row) {
      if (unknown.has(hex)) return null;
      row = (await findRegistryKeyByHash(sql, digest)) ?? undefined;
      if (!row) {
        if (unknown.size >= UNKNOWN_MAX) unknown.clear();
        unknown.add(hex);
        return null;
      }
    }
    return timingSafeEqual(row.key_sha256, digest) ? row : null;
  }

  async function byId(id: string): Promise<RegistryKeyRow | null> {
    if (!UUID.test(id)) return null;
    return (cache.isReady ? cache.get(id) : undefined) ?? (await findRegistryKey(sql, id));
  }

  async function resolve(request: FastifyRequest): Promise<RegistryKeyRow | null> {
    const token = bearerToken(request);
    if (!token) {
      // an Authorization header that names a key but is not a well-formed Bearer value
      const header = request.headers.authorization;
      if (typeof header === 'string' && header.includes(`${KEY_PREFIX}_`)) throw invalid('The Authorization header is malformed: expected Bearer apk_<key>');
      return null;
    }
    if (looksLikeApiKey(token)) {
      if (!isApiKey(token)) throw invalid('The Bearer key is malformed: expected apk_ and 43 base64url characters');
      const row = await byKey(token);
      if (!row) throw invalid('The Bearer key is not known');
      return usable(row, 'key');
    }
    if (!JWT_SHAPE.test(token)) return null;
    let typ: unknown;
    try {
      typ = decodeProtectedHeader(token).typ;
    } catch {
      return null; // three dots of base64url that are no JWT: not ours
    }
    if (typeof typ !== 'string' || typ.toLowerCase() !== ACCESS_TOKEN_TYP) return null;
    const signer = await signerOf();
    let sub: string;
    try {
      ({ sub } = await signer.verify(token, deps.issuerOf(request)));
    } catch (err) {
      if (err instanceof joseErrors.JWTExpired) throw invalid('The access token expired', 'Get a new one from POST /oauth/token');
      throw invalid('The access token is not valid here', 'Get a token from POST /oauth/token of this service');
    }
    const row = await byId(sub);
    if (!row) throw invalid('The access token names no registration');
    return usable(row, 'registration');
  }

  return {
    identify(request) {
      let p = memo.get(request);
      if (!p) memo.set(request, (p = resolve(request)));
      return p;
    },
    async require(request) {
      const row = await this.identify(request);
      if (!row) throw invalid('A Bearer key is required');
      return row;
    },
    changed: (id) => cache.refresh(id),
    byId,
    byKey,
    signer: signerOf,
  };
}
