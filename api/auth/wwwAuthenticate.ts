/**
 * The WWW-Authenticate challenge of every 401 (issue 29 item 2; DESIGN.md section 12 "Standard
 * faces"). RFC 9110 11.6.1 requires one on every 401; which one names how to authenticate here:
 *
 *  - the Bearer routes (a registry key, an OAuth access token of POST /oauth/token): RFC 6750 section 3,
 *    `Bearer realm="agent-passport", resource_metadata="<base>/.well-known/oauth-protected-resource"`
 *    (RFC 9728 5.1), plus error="invalid_token" and error_description when the request carried a
 *    credential (RFC 6750 3.1: a request without one gets no error code);
 *  - the admin routes: Bearer too, with their own realm (the admin token is no OAuth token, but it is
 *    sent as one);
 *  - the DID-signed routes: this service's scheme `DID-Challenge`, naming the three headers, the
 *    signature algorithms and the URL that issues challenges (challenge_uri); error names the catalog
 *    code when a signature was sent.
 *
 * The OAuth token endpoint answers its own `Basic` challenge (RFC 6749 2.3.1), set by the route.
 */
import type { FastifyRequest } from 'fastify';
import { CHALLENGE_HEADER, DID_HEADER, SIGNATURE_HEADER } from '../plugins/signedRequest.js';

export const PROTECTED_RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';
export const CHALLENGE_PATH = '/auth/challenge';
/** The authentication scheme of DID-signed requests (its parameters: see didChallenge). */
export const DID_SCHEME = 'DID-Challenge';
export const REALM = 'agent-passport';
export const ADMIN_REALM = 'agent-passport-admin';

/** A quoted-string of RFC 9110 holding only what RFC 6750 3 allows in error_description (no quote, no backslash). */
function quoted(text: string): string {
  return `"${text.replace(/[^\x20-\x7e]|["\\]/g, ' ').slice(0, 200)}"`;
}

function baseOf(publicBaseUrl: string | undefined, request: FastifyRequest): string {
  return (publicBaseUrl ?? `${request.protocol}://${request.host}`).replace(/\/+$/, '');
}

export function bearerChallenge(base: string, opts: { realm?: string; error?: { description: string } } = {}): string {
  const params = [`realm=${quoted(opts.realm ?? REALM)}`];
  if (opts.error) params.push('error="invalid_token"', `error_description=${quoted(opts.error.description)}`);
  params.push(`resource_metadata=${quoted(`${base}${PROTECTED_RESOURCE_METADATA_PATH}`)}`);
  return `Bearer ${params.join(', ')}`;
}

export function didChallenge(base: string, error?: { code: string; description: string }): string {
  const params = [
    `realm=${quoted(REALM)}`,
    `challenge_uri=${quoted(`${base}${CHALLENGE_PATH}`)}`,
    `headers=${quoted([DID_HEADER, CHALLENGE_HEADER, SIGNATURE_HEADER].join(' '))}`,
    'algorithms="ed25519 ecdsa-secp256k1"',
  ];
  if (error) params.push(`error=${quoted(error.code)}`, `error_description=${quoted(error.description)}`);
  return `${DID_SCHEME} ${params.join(', ')}`;
}

/** The WWW-Authenticate value of a 401 with this catalog code, on this request. */
export function wwwAuthenticateFor(request: FastifyRequest, code: string, message: string, publicBaseUrl: string | undefined): string {
  const base = baseOf(publicBaseUrl, request);
  if (code.startsWith('auth_')) {
    const signed = [DID_HEADER, CHALLENGE_HEADER, SIGNATURE_HEADER].some((h) => request.headers[h] !== undefined);
    return didChallenge(base, signed ? { code, description: message } : undefined);
  }
  if (code === 'admin_auth_required') return bearerChallenge(base, { realm: ADMIN_REALM });
  // agent_key_invalid, agent_key_revoked, and any other 401: the registry key / OAuth bearer
  const sent = request.headers.authorization !== undefined;
  return bearerChallenge(base, sent ? { error: { description: message } } : {});
}
