/**
 * What /openapi.json says about authentication and the answers every route can give (issue 29 item 3),
 * applied to the whole document in one place rather than in each route file:
 *
 *  - securitySchemes: the three DID signature headers (apiKey in header each, required together), the
 *    registry key and its OAuth client-credentials token (Bearer), the admin token (Bearer), the x402
 *    payment header, and HTTP Basic for the OAuth token endpoint;
 *  - a `security` requirement on every operation, read from the error catalog (domain/errors.ts), which
 *    lists for each code the routes that answer it and which test/api/hardeningLedger.test.ts holds to
 *    the route files: a route answering auth_header_missing is DID-signed (all its operations but those
 *    named in UNSIGNED_ON_SIGNED_PATH, or OPTIONAL_SIGNATURE when the signature is optional), admin_auth_required means the admin
 *    token, passport_payment_required adds the x402 payment; GET/DELETE /api/v1/agents/me need the key or
 *    token; every other operation is anonymous, a registry key or token optional (the keyed free tier);
 *  - the answers every route can give ('*' in the catalog): 400 malformed request, 401 a Bearer
 *    credential that is not valid (checked on every request), 429 rate limit, 500 and 503; 413 and 415
 *    where a body is taken. A route's own declaration of a status wins.
 */
import { SERVICE_ERRORS, SPEC_ERRORS } from '../../domain/errors.js';

type Json = Record<string, any>;

const SIGNATURE = { serviceDid: [], serviceChallenge: [], serviceSignature: [] };
const KEYED = [{ registryKey: [] }, { oauth: ['registry'] }];

export const SECURITY_SCHEMES = {
  serviceDid: { type: 'apiKey', in: 'header', name: 'X-Service-DID', description: 'DID signature authentication (with X-Service-Challenge and X-Service-Signature): the signing DID, did:hedera:{network}:{accountId}' },
  serviceChallenge: { type: 'apiKey', in: 'header', name: 'X-Service-Challenge', description: 'DID signature authentication: a single-use challenge of GET /auth/challenge?did=, sent as is' },
  serviceSignature: { type: 'apiKey', in: 'header', name: 'X-Service-Signature', description: "DID signature authentication: hex signature of the challenge's exact bytes with the account key (ED25519, or ECDSA secp256k1)" },
  registryKey: { type: 'http', scheme: 'bearer', bearerFormat: 'apk_<43 base64url characters>', description: 'A registry key of POST /api/v1/agents/register or POST /oauth/register (the keyed free tier)' },
  oauth: {
    type: 'oauth2',
    description: 'An access token of the client credentials grant (client_id = the registration id, client_secret = its registry key)',
    flows: { clientCredentials: { tokenUrl: '/oauth/token', scopes: { registry: 'the registration record and the keyed free tier' } } },
  },
  adminToken: { type: 'http', scheme: 'bearer', description: "The operator's admin token (its sha256 is ADMIN_TOKEN_SHA256)" },
  x402Payment: { type: 'apiKey', in: 'header', name: 'PAYMENT-SIGNATURE', description: 'x402 v2 payment (base64 JSON) for the requirements of the 402 PAYMENT-REQUIRED header' },
  oauthClient: { type: 'http', scheme: 'basic', description: 'OAuth client authentication at the token endpoint (client_secret_basic); client_secret_post sends the same in the body' },
} as const;

/** Operations on a signed path whose signature is optional (a signer sees more, or sponsors). */
const OPTIONAL_SIGNATURE = new Set(['GET /market/tasks/{taskId}', 'POST /api/v1/agents/register']);
/** Operations on a signed path that take no signature at all (the catalog lists routes by path, not method). */
const UNSIGNED_ON_SIGNED_PATH = new Set(['GET /market/tasks']);
const KEY_REQUIRED = new Set(['GET /api/v1/agents/me', 'DELETE /api/v1/agents/me']);

/** The OpenAPI paths of the routes the catalog lists for a code (fastify `:param` as `{param}`). */
function pathsOf(code: string): Set<string> {
  const entry = [...SPEC_ERRORS, ...SERVICE_ERRORS].find((e) => e.code === code);
  return new Set((entry?.affected_routes ?? []).map((url: string) => url.replace(/:([A-Za-z0-9_]+)/g, '{$1}')));
}

const errorResponse = (description: string) => ({ description, content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } });
const RATE_LIMIT_HEADERS = {
  'X-RateLimit-Limit': { schema: { type: 'integer' }, description: 'Requests allowed in the window' },
  'X-RateLimit-Remaining': { schema: { type: 'integer' }, description: 'Requests left in the window' },
  'X-RateLimit-Reset': { schema: { type: 'integer' }, description: 'Unix time (seconds) the window resets' },
  'Retry-After': { schema: { type: 'integer' }, description: 'Seconds until a retry can pass' },
};
const COMMON_RESPONSES: Record<string, Json> = {
  '400': errorResponse('invalid_request: a malformed request (a field missing, of the wrong type or unknown; bad bytes)'),
  '401': { ...errorResponse('A credential that is not valid: agent_key_invalid / agent_key_revoked for a Bearer key or token (checked on every route), auth_* on DID-signed routes, admin_auth_required'), headers: { 'WWW-Authenticate': { schema: { type: 'string' }, description: 'The challenge: Bearer (with resource_metadata) or DID-Challenge' } } },
  '429': { ...errorResponse('rate_limit_exceeded (or the route\'s own quota): wait until X-RateLimit-Reset'), headers: RATE_LIMIT_HEADERS },
  '500': errorResponse('internal_server_error'),
  '503': errorResponse('service_unavailable: a dependency cannot serve now; retry'),
};
const BODY_RESPONSES: Record<string, Json> = {
  '413': errorResponse('payload_too_large'),
  '415': errorResponse('unsupported_media_type'),
};

/** Adds the security schemes, each operation's requirement and the common answers to an OpenAPI document (in place). */
export function applySecurityAndCommonAnswers(doc: Json): Json {
  const signed = pathsOf('auth_header_missing');
  const admin = pathsOf('admin_auth_required');
  const paid = pathsOf('passport_payment_required');
  doc.components = { ...doc.components, securitySchemes: { ...doc.components?.securitySchemes, ...SECURITY_SCHEMES } };
  for (const [path, item] of Object.entries<Json>(doc.paths ?? {})) {
    for (const method of ['get', 'put', 'post', 'delete', 'patch']) {
      const op = item[method] as Json | undefined;
      if (!op) continue;
      const name = `${method.toUpperCase()} ${path}`;
      if (!op.security) {
        if (admin.has(path)) op.security = [{ adminToken: [] }];
        else if (KEY_REQUIRED.has(name)) op.security = KEYED;
        else if (path === '/oauth/token') op.security = [{ oauthClient: [] }, {}];
        else if (paid.has(path) && method === 'post') op.security = [{ ...SIGNATURE, x402Payment: [] }];
        else if (signed.has(path) && OPTIONAL_SIGNATURE.has(name)) op.security = [{}, SIGNATURE, ...KEYED];
        else if (signed.has(path) && !UNSIGNED_ON_SIGNED_PATH.has(name)) op.security = [SIGNATURE];
        else op.security = [{}, ...KEYED];
      }
      op.responses ??= {};
      const extra = { ...COMMON_RESPONSES, ...(op.requestBody ? BODY_RESPONSES : {}) };
      for (const [status, response] of Object.entries(extra)) op.responses[status] ??= response;
    }
  }
  return doc;
}
