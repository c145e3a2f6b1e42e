/**
 * What this authorization server offers OAuth clients, and RFC 7591 client metadata read against it
 * (POST /oauth/register; issue 29 item 1). A dynamically registered client is a registry key: the
 * registration id is its client_id, the key its client_secret, and it is made by the same
 * registration as POST /api/v1/agents/register (same per-IP cap).
 *
 * RFC 7591 2: metadata the server does not understand is ignored; metadata it understands but does
 * not offer is refused (3.2.2 invalid_client_metadata, invalid_redirect_uri); a value the client
 * left out is substituted (3.2.1), e.g. grant_types, whose RFC default (authorization_code) this
 * server does not offer, becomes client_credentials.
 */
import { REGISTRY_LIMITS } from '../../domain/registry.js';

/** The one scope: what a registry key may do (its own record, the keyed free tier). */
export const OAUTH_SCOPES = ['registry'] as const;
export const GRANT_TYPES = ['client_credentials'] as const;
export const TOKEN_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'] as const;
/** The registration name of a client that sends no client_name. */
export const DEFAULT_CLIENT_NAME = 'oauth-client';

export type TokenAuthMethod = (typeof TOKEN_AUTH_METHODS)[number];

export interface ClientMetadataInput {
  client_name?: string;
  grant_types?: string[];
  response_types?: string[];
  token_endpoint_auth_method?: string;
  scope?: string;
  redirect_uris?: string[];
}

export interface ClientRegistration {
  name: string;
  tokenEndpointAuthMethod: TokenAuthMethod;
  scope: string;
}

export interface ClientMetadataRefusal {
  error: 'invalid_client_metadata' | 'invalid_redirect_uri';
  description: string;
}

const CONTROL = /\p{Cc}/u;

/** The registration the metadata asks for, or the RFC 7591 3.2.2 refusal. */
export function clientRegistrationOf(metadata: ClientMetadataInput): ClientRegistration | ClientMetadataRefusal {
  const refuse = (description: string): ClientMetadataRefusal => ({ error: 'invalid_client_metadata', description });
  if (metadata.redirect_uris?.length) {
    return { error: 'invalid_redirect_uri', description: 'No redirect-based grant is offered: register without redirect_uris' };
  }
  const grants = metadata.grant_types ?? [...GRANT_TYPES];
  if (!grants.length || grants.some((g) => !(GRANT_TYPES as readonly string[]).includes(g))) {
    return refuse(`grant_types: only ${GRANT_TYPES.join(', ')} is offered`);
  }
  if (metadata.response_types?.length) return refuse('response_types: no response type is offered (only the client_credentials grant)');
  const method = metadata.token_endpoint_auth_method ?? 'client_secret_basic';
  if (!(TOKEN_AUTH_METHODS as readonly string[]).includes(method)) {
    return refuse(`token_endpoint_auth_method: one of ${TOKEN_AUTH_METHODS.join(', ')}`);
  }
  const scopes = (metadata.scope ?? OAUTH_SCOPES.join(' ')).split(' ').filter(Boolean);
  if (!scopes.length || scopes.some((s) => !(OAUTH_SCOPES as readonly string[]).includes(s))) {
    return refuse(`scope: the scopes offered are ${OAUTH_SCOPES.join(' ')}`);
  }
  const name = (metadata.client_name ?? DEFAULT_CLIENT_NAME).trim();
  if (name.length < REGISTRY_LIMITS.nameMin || name.length > REGISTRY_LIMITS.nameMax || CONTROL.test(name)) {
    return refuse(`client_name: ${REGISTRY_LIMITS.nameMin}-${REGISTRY_LIMITS.nameMax} characters without control characters`);
  }
  return { name, tokenEndpointAuthMethod: method as TokenAuthMethod, scope: [...new Set(scopes)].join(' ') };
}

export function isRefusal(r: ClientRegistration | ClientMetadataRefusal): r is ClientMetadataRefusal {
  return 'error' in r;
}
