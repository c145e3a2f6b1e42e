/**
 * Discovery documents (SPEC 2 "OAuth and discovery documents", 4.7; DESIGN.md section 10). The
 * signature directory lives in wellKnown.ts; these are the others:
 *   /.well-known/oauth-authorization-server  RFC 8414 metadata; every endpoint it names answers
 *                                            (routes/oauth.ts, routes/registry/)
 *   /.well-known/oauth-protected-resource    RFC 9728 metadata of this API as a resource
 *   /.well-known/api-catalog                 RFC 9727 linkset (application/linkset+json): OpenAPI,
 *                                            docs, status
 *   /.well-known/webfinger?resource=<DID>    RFC 7033 JRD (application/jrd+json): the DID document and
 *                                            passport (active passport), directory entry and agent
 *                                            card (registered agent); 404 for a DID with neither,
 *                                            400 without resource
 *   /.well-known/agent-card.json             the A2A (v1.0) agent card of the service itself, signed
 *                                            (section 8.4: JWS over its RFC 8785 form, the trust
 *                                            snapshot key, published in the signature directory)
 *
 * URLs are absolute, from PUBLIC_BASE_URL (else the request's own origin), so the issuer the
 * metadata names is the one the tokens carry.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import { publicBase, type AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { activePassportOf, cacheReady, usePassportCache } from '../passports/cache.js';
import { API_VERSION } from '../plugins/openapi.js';
import { errorResponses } from '../schemas/common.js';
import { jrdSchema, webfingerQuerySchema } from '../schemas/discovery.js';
import { findAgent } from '../../db/queries/agents.js';
import { cardSigningPayload } from '../../domain/agentCardSignature.js';
import type { TrustSigner } from '../trust/signingKey.js';
import { SIGNATURE_DIRECTORY_PATH } from './wellKnown.js';
import { parseHederaDid } from '@agent-passport/core/did';
import { AUTHORIZE_ROUTE, CLIENT_REGISTRATION_ROUTE, GRANT_TYPES, JWKS_ROUTE, OAUTH_SCOPES, TOKEN_AUTH_METHODS, TOKEN_ROUTE } from './oauth.js';
import { ME_ROUTE, REGISTER_ROUTE } from './registry/index.js';

export const LINKSET_MEDIA_TYPE = 'application/linkset+json';
export const API_CATALOG_PROFILE = 'https://www.rfc-editor.org/info/rfc9727';
export const JRD_MEDIA_TYPE = 'application/jrd+json';

/** WebFinger link relations: registered ones where they fit, URNs of this service otherwise. */
export const WEBFINGER_RELS = {
  didDocument: 'describedby',
  passport: 'urn:agent-passport:rel:passport',
  directoryEntry: 'urn:agent-passport:rel:directory-entry',
  agentCard: 'urn:agent-passport:rel:agent-card',
} as const;

export function authorizationServerMetadata(base: string) {
  return {
    issuer: base,
    authorization_endpoint: `${base}${AUTHORIZE_ROUTE}`,
    token_endpoint: `${base}${TOKEN_ROUTE}`,
    // RFC 7591 dynamic client registration; POST /api/v1/agents/register keeps SPEC's own shape
    registration_endpoint: `${base}${CLIENT_REGISTRATION_ROUTE}`,
    jwks_uri: `${base}${JWKS_ROUTE}`,
    scopes_supported: [...OAUTH_SCOPES],
    // no response type is offered at the authorization endpoint: only the client credentials grant
    response_types_supported: [] as string[],
    grant_types_supported: [...GRANT_TYPES],
    token_endpoint_auth_methods_supported: [...TOKEN_AUTH_METHODS],
    service_documentation: `${base}/docs`,
  };
}

export function protectedResourceMetadata(base: string) {
  return {
    resource: base,
    authorization_servers: [base],
    jwks_uri: `${base}${JWKS_ROUTE}`,
    scopes_supported: [...OAUTH_SCOPES],
    bearer_methods_supported: ['header'],
    resource_signing_alg_values_supported: ['EdDSA'],
    resource_name: 'Agent Passport API',
    resource_documentation: `${base}/docs`,
  };
}

export function apiCatalog(base: string) {
  return {
    linkset: [
      {
        anchor: `${base}/`,
        'service-desc': [{ href: `${base}/openapi.json`, type: 'application/vnd.oai.openapi+json;version=3.1' }],
        'service-doc': [{ href: `${base}/docs`, type: 'text/html' }],
        status: [{ href: `${base}/health`, type: 'application/json' }],
      },
    ],
  };
}

/** The service's A2A agent card; `registry` false (no PostgreSQL) leaves out the key and OAuth schemes and the registry skill. */
export function serviceAgentCard(base: string, registry = true) {
  const card = {
    name: 'Agent Passport',
    description:
      'Identity passports for AI agents as Hedera NFTs with DIDs, an agent directory, A2A messaging over a consensus topic, a task marketplace with HBAR escrow, ' +
      'domain trust snapshots and registry api keys. The interface is the REST API described by its OpenAPI document (not the A2A task protocol).',
    supportedInterfaces: [{ url: `${base}/openapi.json`, protocolBinding: 'OPENAPI', protocolVersion: '1.0' }],
    provider: { organization: 'Agent Passport', url: base },
    version: API_VERSION,
    documentationUrl: `${base}/docs`,
    capabilities: { streaming: false, pushNotifications: false },
    securitySchemes: registry ? {
      registryKey: { httpAuthSecurityScheme: { scheme: 'Bearer', bearerFormat: 'apk_<43 base64url characters>', description: `POST ${REGISTER_ROUTE}` } },
      oauth: {
        oauth2SecurityScheme: {
          flows: { clientCredentials: { tokenUrl: `${base}${TOKEN_ROUTE}`, scopes: { registry: 'the registration record and the keyed free tier' } } },
          oauth2MetadataUrl: `${base}/.well-known/oauth-authorization-server`,
        },
      },
    } : undefined,
    defaultInputModes: ['application/json'],
    defaultOutputModes: ['application/json'],
    skills: [
      { id: 'passports', name: 'Passports and DIDs', description: 'Request (x402 payment), upgrade and verify agent passports; resolve DIDs to DID documents.', tags: ['identity', 'did', 'nft', 'hedera'], examples: ['GET /passport/{tokenId}/{serial}', 'GET /did/{did}'] },
      { id: 'directory', name: 'Agent directory', description: 'Register a passport-holding agent and find agents by name, capability or skill.', tags: ['directory', 'discovery'], examples: ['GET /agents?capability=payment'] },
      { id: 'a2a', name: 'A2A messaging', description: 'Send messages between agents over a consensus topic; read inboxes and conversations.', tags: ['a2a', 'messaging'], examples: ['POST /a2a/send-signed'] },
      { id: 'marketplace', name: 'Task marketplace', description: 'Post, claim, deliver and complete tasks paid in HBAR with escrow.', tags: ['marketplace', 'tasks', 'escrow'], examples: ['GET /market/tasks'] },
      { id: 'trust', name: 'Domain trust snapshots', description: 'Signed agent-readiness snapshots of a domain, with ownership challenges and on-chain attestation.', tags: ['trust', 'agent-readiness'], examples: ['GET /api/trust/{domain}'] },
      { id: 'registry', name: 'Registry api keys', description: 'A free api key (keyed free tier) and OAuth client-credentials tokens.', tags: ['registry', 'oauth'], examples: [`POST ${REGISTER_ROUTE}`, `GET ${ME_ROUTE}`] },
    ],
  };
  if (registry) return card;
  const { securitySchemes: _none, ...rest } = card;
  return { ...rest, skills: rest.skills.filter((s) => s.id !== 'registry') };
}

/** Signed cards kept per base URL (PUBLIC_BASE_URL, or each origin the API was reached by): a handful. */
const SIGNED_CARDS_MAX = 16;

/**
 * The service card with its A2A v1.0 signature (section 8.4): a detached JWS (EdDSA) over the
 * canonical card, by the trust snapshot key (kid as in the signature directory, jku naming it).
 * Signed once per base URL and kept.
 */
export function signedServiceCards(signer: TrustSigner) {
  const signed = new Map<string, string>();
  return async (base: string, registry: boolean): Promise<string> => {
    const key = `${registry ? 1 : 0}${base}`;
    const hit = signed.get(key);
    if (hit !== undefined) return hit;
    const card = serviceAgentCard(base, registry);
    const payload = new TextEncoder().encode(cardSigningPayload(card));
    const signature = await signer.signJws(payload, { typ: 'JOSE', kid: signer.keyId, jku: `${base}${SIGNATURE_DIRECTORY_PATH}` });
    const body = JSON.stringify({ ...card, signatures: [signature] });
    if (signed.size >= SIGNED_CARDS_MAX) signed.delete(signed.keys().next().value!);
    signed.set(key, body);
    return body;
  };
}

const discoveryRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const base = (request: FastifyRequest) => publicBase(ctx, request);
  const json = 'application/json; charset=utf-8';
  const signedCard = signedServiceCards(app.trustSnapshots.signer);

  app.get('/.well-known/api-catalog', { schema: { tags: ['discovery'], summary: 'API catalog (RFC 9727 linkset): OpenAPI, docs, status' } }, async (request, reply) =>
    reply
      .type(`${LINKSET_MEDIA_TYPE}; profile="${API_CATALOG_PROFILE}"`)
      .header('link', `<${base(request)}/.well-known/api-catalog>; rel="api-catalog"`)
      .send(apiCatalog(base(request))),
  );
  app.get('/.well-known/agent-card.json', { schema: { tags: ['discovery'], summary: 'The A2A agent card (v1.0) of this service' } }, async (request, reply) =>
    reply.type(json).send(await signedCard(base(request), ctx.sql !== undefined)),
  );

  // The OAuth documents and WebFinger need PostgreSQL (registry keys, passports, directory): without it
  // they are absent rather than naming endpoints that do not exist.
  const { sql } = ctx;
  if (!sql) return;
  app.get('/.well-known/oauth-authorization-server', { schema: { tags: ['discovery'], summary: 'OAuth 2.0 authorization server metadata (RFC 8414)' } }, async (request, reply) =>
    reply.type(json).send(authorizationServerMetadata(base(request))),
  );
  app.get('/.well-known/oauth-protected-resource', { schema: { tags: ['discovery'], summary: 'OAuth 2.0 protected resource metadata (RFC 9728)' } }, async (request, reply) =>
    reply.type(json).send(protectedResourceMetadata(base(request))),
  );
  const network = ctx.ledger?.deployment.network ?? ctx.config.HEDERA_NETWORK;
  const passports = usePassportCache(app, sql);

  app.get(
    '/.well-known/webfinger',
    {
      schema: {
        tags: ['discovery'],
        summary: 'WebFinger (RFC 7033) for an agent DID: links to its DID document, passport, directory entry and agent card',
        querystring: webfingerQuerySchema,
        response: { 200: jrdSchema, ...errorResponses(400, 404, 503) },
      },
    },
    async (request, reply) => {
      const { resource } = request.query;
      const did = parseHederaDid(resource);
      const unknown = () => new ApiError('agent_not_found', `No agent or passport is known for ${echo(resource)}`, { hint: `resource: an agent DID of the form did:hedera:${network}:<accountId>` });
      if (!did || did.network !== network) throw unknown();
      if (!passports.isReady) await cacheReady(passports);
      const passport = activePassportOf(passports, network, did.accountId);
      const agent = await findAgent(sql, did.did);
      const registered = agent && agent.status === 'registered' ? agent : null;
      if (!passport && !registered) throw unknown();
      const b = base(request);
      const links: { rel: string; href: string; type?: string }[] = [];
      if (passport) {
        links.push({ rel: WEBFINGER_RELS.didDocument, href: `${b}/did/${did.did}`, type: 'application/did+json' });
        links.push({ rel: WEBFINGER_RELS.passport, href: `${b}/passport/${passport.token_id}/${passport.serial}`, type: 'application/json' });
      }
      if (registered) {
        links.push({ rel: WEBFINGER_RELS.directoryEntry, href: `${b}/agents/${encodeURIComponent(did.did)}`, type: 'application/json' });
        if (registered.agent_card) links.push({ rel: WEBFINGER_RELS.agentCard, href: registered.agent_card, type: 'application/json' });
      }
      const requested = ([] as string[]).concat(request.query.rel ?? []);
      const body = { subject: did.did, links: requested.length ? links.filter((l) => requested.includes(l.rel)) : links };
      return reply.type(`${JRD_MEDIA_TYPE}; charset=utf-8`).header('access-control-allow-origin', '*').send(body);
    },
  );
};

export default discoveryRoutes;
