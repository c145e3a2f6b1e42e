/**
 * The OAuth 2.0 endpoints named by /.well-known/oauth-authorization-server (RFC 8414; DESIGN.md
 * section 10: advertise only what works):
 *   POST /oauth/token         client credentials grant (RFC 6749 4.4): client_id = the registration
 *                             id, client_secret = its registry key, sent with HTTP Basic
 *                             (client_secret_basic) or in the form body (client_secret_post); answers
 *                             a short-lived EdDSA JWT access token (RFC 9068 typ at+jwt), accepted
 *                             wherever a registry key is
 *   GET|POST /oauth/authorize the authorization endpoint the metadata must name; no response type is
 *                             offered (only client credentials), so it answers 400
 *                             unsupported_response_type, never a redirect (no client has a
 *                             registered redirect URI, RFC 6749 4.1.2.1)
 *   GET /oauth/jwks.json      the public keys of the token signatures (jwks_uri)
 *   POST /oauth/register      RFC 7591 dynamic client registration (registration_endpoint): client
 *                             metadata in (api/registry/clientMetadata.ts), 201 with client_id (the
 *                             registration id) and client_secret (its registry key) out; the same
 *                             registration and per-IP cap as POST /api/v1/agents/register
 *
 * OAuth errors carry the RFC 6749 5.2 fields (error = the OAuth error code, error_description) and
 * also this service's catalog `code`, so they fit the service's error schema too.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { publicBase, type AppContext } from '../context.js';
import type { ErrorCode } from '../../domain/errors.js';
import type { RegistryClients } from '../registry/clients.js';
import { registryRegistrations } from '../registry/registration.js';
import { clientRegistrationOf, isRefusal, OAUTH_SCOPES } from '../registry/clientMetadata.js';
import { clientInformationSchema, clientMetadataSchema, oauthErrorSchema } from '../schemas/oauth.js';
import { errorResponses } from '../schemas/common.js';

export const TOKEN_ROUTE = '/oauth/token';
export const AUTHORIZE_ROUTE = '/oauth/authorize';
export const JWKS_ROUTE = '/oauth/jwks.json';
export const CLIENT_REGISTRATION_ROUTE = '/oauth/register';
export { GRANT_TYPES, OAUTH_SCOPES, TOKEN_AUTH_METHODS } from '../registry/clientMetadata.js';

const FORM = 'application/x-www-form-urlencoded';
const REALM = 'Basic realm="agent-passport", charset="UTF-8"';

type OAuthErrorName = 'invalid_request' | 'invalid_client' | 'unsupported_grant_type' | 'invalid_scope' | 'unsupported_response_type' | 'invalid_client_metadata' | 'invalid_redirect_uri';

function oauthError(reply: FastifyReply, status: number, error: OAuthErrorName, description: string, code: ErrorCode, hint: string) {
  return reply
    .code(status)
    .header('cache-control', 'no-store')
    .header('pragma', 'no-cache')
    .type('application/json; charset=utf-8')
    .send({ error, error_description: description, code, retryable: false, hint });
}

/** Decodes application/x-www-form-urlencoded; a repeated parameter stays an array (refused later). */
function parseForm(text: string): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of new URLSearchParams(text)) {
    const prev = out[k];
    out[k] = prev === undefined ? v : Array.isArray(prev) ? [...prev, v] : [prev, v];
  }
  return out;
}

/** client_id:client_secret of HTTP Basic (each form-urlencoded, RFC 6749 2.3.1); null without Basic; 'malformed' when broken. */
function basicCredentials(request: FastifyRequest): { id: string; secret: string } | null | 'malformed' {
  const header = request.headers.authorization;
  if (typeof header !== 'string' || !/^basic\s/i.test(header)) return null;
  const decoded = Buffer.from(header.replace(/^basic\s+/i, '').trim(), 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  if (colon < 0) return 'malformed';
  try {
    return { id: decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' ')), secret: decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' ')) };
  } catch {
    return 'malformed';
  }
}

const oauthRoutes: FastifyPluginAsyncZod<{ ctx: AppContext; clients: RegistryClients }> = async (app, { ctx, clients }) => {
  // RFC 6749 3.2: the token endpoint takes form-encoded parameters (JSON is accepted too).
  app.addContentTypeParser(FORM, { parseAs: 'string', bodyLimit: 8 * 1024 }, (_req, body, done) => done(null, parseForm(body as string)));

  app.post(
    TOKEN_ROUTE,
    {
      bodyLimit: 8 * 1024,
      schema: {
        tags: ['oauth'],
        summary: 'OAuth 2.0 token endpoint: client credentials -> short-lived EdDSA JWT access token',
        description:
          'grant_type=client_credentials; client_id = the registration id, client_secret = its registry key (apk_...), by HTTP Basic or in the form body. ' +
          'Answers { access_token, token_type: "Bearer", expires_in, scope }. The token is accepted wherever a registry key is (Bearer). ' +
          'Errors follow RFC 6749 5.2 (error, error_description) and carry the catalog code.',
      },
    },
    async (request, reply) => {
      const raw = request.body;
      const params: Record<string, unknown> = raw && typeof raw === 'object' && !Array.isArray(raw) ? (raw as Record<string, unknown>) : {};
      const str = (name: string): string | undefined | null => {
        const v = params[name];
        if (v === undefined) return undefined;
        return typeof v === 'string' ? v : null; // null: repeated or not a string
      };
      const names = ['grant_type', 'client_id', 'client_secret', 'scope'] as const;
      const bad = names.find((n) => str(n) === null);
      if (bad) return oauthError(reply, 400, 'invalid_request', `${bad} must be given once, as a string`, 'invalid_request', 'Send each parameter once (application/x-www-form-urlencoded)');

      const basic = basicCredentials(request);
      if (basic === 'malformed') return oauthError(reply.header('www-authenticate', REALM), 401, 'invalid_client', 'The Basic credentials are malformed', 'agent_key_invalid', 'Send Authorization: Basic base64(client_id:client_secret)');
      const postId = str('client_id');
      const postSecret = str('client_secret');
      if (basic && postSecret !== undefined) {
        return oauthError(reply, 400, 'invalid_request', 'Use one client authentication method, not two', 'invalid_request', 'Send the credentials by HTTP Basic or in the body, not both');
      }
      const id = basic?.id ?? postId ?? undefined;
      const secret = basic?.secret ?? postSecret ?? undefined;
      // RFC 6749 5.2 requires the Basic challenge when the client sent Basic; RFC 9110 11.6.1 asks for one on every 401
      const unauthorised = (description: string, code: ErrorCode, hint: string) => oauthError(reply.header('www-authenticate', REALM), 401, 'invalid_client', description, code, hint);
      if (!id || !secret) return unauthorised('Client authentication is required', 'agent_key_invalid', 'client_id = the registration id, client_secret = the registry key (POST /api/v1/agents/register)');
      const row = await clients.byKey(secret);
      if (!row || row.id !== id) return unauthorised('The client credentials are not valid', 'agent_key_invalid', 'client_id = the registration id, client_secret = the registry key (POST /api/v1/agents/register)');
      if (row.status === 'revoked') return unauthorised('The client registration was revoked', 'agent_key_revoked', 'Register again with POST /api/v1/agents/register');

      const grant = str('grant_type');
      if (!grant) return oauthError(reply, 400, 'invalid_request', 'grant_type is required', 'invalid_request', 'Send grant_type=client_credentials');
      if (grant !== 'client_credentials') return oauthError(reply, 400, 'unsupported_grant_type', 'Only the client_credentials grant is offered', 'invalid_request', 'Send grant_type=client_credentials');
      const scope = str('scope');
      const requested = scope ? scope.split(' ').filter(Boolean) : [...OAUTH_SCOPES];
      if (requested.some((s) => !(OAUTH_SCOPES as readonly string[]).includes(s))) {
        return oauthError(reply, 400, 'invalid_scope', `Scopes offered: ${OAUTH_SCOPES.join(' ')}`, 'invalid_request', 'Omit scope or send scope=registry');
      }

      const signer = await clients.signer();
      const { token, expiresIn } = await signer.issue({ issuer: publicBase(ctx, request), clientId: row.id, scope: requested.join(' '), ttlSeconds: ctx.config.OAUTH_TOKEN_TTL_S });
      return reply
        .header('cache-control', 'no-store')
        .header('pragma', 'no-cache')
        .type('application/json; charset=utf-8')
        .send({ access_token: token, token_type: 'Bearer', expires_in: expiresIn, scope: requested.join(' ') });
    },
  );

  const registrations = registryRegistrations(ctx, app.workflowSettings, clients);
  app.post(
    CLIENT_REGISTRATION_ROUTE,
    {
      bodyLimit: 16 * 1024,
      // a body that is not client metadata is an RFC 7591 3.2.2 error, not the service's 400 (below)
      attachValidation: true,
      schema: {
        tags: ['oauth'],
        summary: 'OAuth 2.0 dynamic client registration (RFC 7591): client metadata -> client_id and client_secret',
        description:
          'The registration_endpoint of /.well-known/oauth-authorization-server. Send client metadata as JSON (client_name, grant_types, token_endpoint_auth_method, scope, ...; ' +
          'metadata this server does not understand is ignored). Answers 201 with client_id (the registration id), client_secret (a registry key, shown this once; ' +
          'it also works as Authorization: Bearer) and client_secret_expires_at 0. The same registration as POST /api/v1/agents/register: ' +
          'at most REGISTER_DAILY_CAP_PER_IP (default 5) per address per rolling 24 h (429 register_rate_limited with Retry-After). ' +
          'Refusals follow RFC 7591 3.2.2 (400 invalid_client_metadata, invalid_redirect_uri) and carry the catalog code. Then POST /oauth/token with grant_type=client_credentials.',
        body: clientMetadataSchema,
        response: { 201: clientInformationSchema, 400: oauthErrorSchema, ...errorResponses(413, 415, 429, 503) },
      },
    },
    async (request, reply) => {
      const refuse = (error: 'invalid_client_metadata' | 'invalid_redirect_uri', description: string) =>
        oauthError(reply, 400, error, description, 'invalid_request', 'Send JSON client metadata: grant_types ["client_credentials"], token_endpoint_auth_method client_secret_basic or client_secret_post, scope registry');
      if (request.validationError) return refuse('invalid_client_metadata', `The client metadata is not valid: ${request.validationError.message}`.slice(0, 300));
      const wanted = clientRegistrationOf(request.body);
      if (isRefusal(wanted)) return refuse(wanted.error, wanted.description);
      const registered = await registrations.register({ name: wanted.name, ip: request.ip });
      return reply
        .code(201)
        .header('cache-control', 'no-store')
        .header('pragma', 'no-cache')
        .send({
          client_id: registered.id,
          client_secret: registered.api_key,
          client_id_issued_at: Math.floor(new Date(registered.created_at).getTime() / 1000),
          client_secret_expires_at: 0 as const,
          client_name: registered.name,
          grant_types: ['client_credentials' as const],
          response_types: [],
          token_endpoint_auth_method: wanted.tokenEndpointAuthMethod,
          scope: wanted.scope,
        });
    },
  );

  const refuseAuthorize = async (_request: FastifyRequest, reply: FastifyReply) =>
    oauthError(
      reply,
      400,
      'unsupported_response_type',
      'This authorization server offers no response type: only the client_credentials grant at the token endpoint',
      'invalid_request',
      `Use POST ${TOKEN_ROUTE} with grant_type=client_credentials`,
    );
  const authorizeSchema = {
    tags: ['oauth'],
    summary: 'OAuth 2.0 authorization endpoint: answers 400 unsupported_response_type (only client credentials are offered)',
    // it never answers 2xx: only the refusal is declared
    response: { 400: oauthErrorSchema },
  };
  app.get(AUTHORIZE_ROUTE, { schema: authorizeSchema }, refuseAuthorize);
  app.post(AUTHORIZE_ROUTE, { bodyLimit: 8 * 1024, schema: authorizeSchema }, refuseAuthorize);

  app.get(JWKS_ROUTE, { schema: { tags: ['oauth'], summary: 'Public keys (JWKS) of the access token signatures' } }, async (_request, reply) => {
    const signer = await clients.signer();
    return reply.type('application/json; charset=utf-8').send({ keys: [signer.publicJwk] });
  });
};

export default oauthRoutes;
