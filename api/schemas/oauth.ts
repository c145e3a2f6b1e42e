/** zod schemas of the OAuth routes (RFC 7591 dynamic client registration; RFC 6749 errors). */
import { z } from 'zod';

const shortText = z.string().max(512);

/**
 * RFC 7591 2 client metadata. Loose: metadata this server does not understand is ignored (RFC 7591 2
 * says it MUST be); metadata it understands but does not offer (another grant, a redirect URI) is
 * refused with invalid_client_metadata or invalid_redirect_uri.
 */
export const clientMetadataSchema = z
  .looseObject({
    client_name: shortText.optional().describe('The registration name (1-64 characters after trimming); default "oauth-client"'),
    grant_types: z.array(shortText).max(16).optional().describe('Only ["client_credentials"]; omitted: client_credentials (the server substitutes it, RFC 7591 3.2.1)'),
    response_types: z.array(shortText).max(16).optional().describe('Only []: no response type is offered'),
    token_endpoint_auth_method: shortText.optional().describe('client_secret_basic (default) or client_secret_post; the token endpoint accepts both'),
    scope: shortText.optional().describe('Space-separated; only "registry" (the default)'),
    redirect_uris: z.array(shortText).max(16).optional().describe('Must be empty or omitted: no redirect-based grant is offered'),
  })
  .meta({ id: 'OAuthClientMetadata' });

export const clientInformationSchema = z
  .object({
    client_id: z.string().describe('The registration id (uuid)'),
    client_secret: z.string().describe('The registry key (apk_ + 43 base64url characters); shown this once, only its sha256 is kept'),
    client_id_issued_at: z.number().int().describe('Seconds since the epoch'),
    client_secret_expires_at: z.literal(0).describe('0: the secret does not expire (revoke it with DELETE /api/v1/agents/me)'),
    client_name: z.string(),
    grant_types: z.array(z.literal('client_credentials')),
    response_types: z.array(z.string()).max(0),
    token_endpoint_auth_method: z.enum(['client_secret_basic', 'client_secret_post']),
    scope: z.string(),
  })
  .meta({ id: 'OAuthClientInformation' });

/** RFC 6749 5.2 / RFC 7591 3.2.2 error, with this service's catalog code (so it is also an ErrorBody). */
export const oauthErrorSchema = z
  .object({
    error: z.string().describe('The OAuth error code (invalid_client_metadata, invalid_client, ...)'),
    error_description: z.string(),
    code: z.string().describe('The catalog code (GET /api/meta/errors)'),
    retryable: z.boolean(),
    hint: z.string(),
  })
  .meta({ id: 'OAuthError' });
