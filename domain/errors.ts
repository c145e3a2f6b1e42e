/**
 * The error catalog: the single source for every `code` a route returns, the statuses the error
 * handler uses, and GET /api/meta/errors. SPEC_ERRORS is SPEC section 7, entry for entry;
 * SERVICE_ERRORS are the protocol-level codes the spec leaves "not shown" (see docs/decisions.md).
 */

export const RECOVERY_ACTIONS = [
  'retry_immediately',
  'change_request',
  'await_human',
  'wait_and_retry',
  'choose_alternative',
  'not_authorized',
  'no_action',
  'escalate',
] as const;
export type RecoveryAction = (typeof RECOVERY_ACTIONS)[number];

export interface ErrorCatalogEntry {
  code: string;
  http_status: number;
  agent_impact: string;
  hint_template: string;
  affected_routes: string[];
  recovery_action: RecoveryAction;
  charge?: 'never';
}

/**
 * affected_routes lists the routes (fastify paths, as in the route table) that really return the
 * code today; '*' means any route (malformed requests, rate limit, shutdown, unexpected errors).
 * A code of a feature not built yet lists none. test/api/hardeningLedger.test.ts checks every listed
 * route exists and that the codes a route file throws are listed for its routes.
 */
const ALL = ['*'];
/** The routes of several lists, each once. */
const routes = (...lists: (string | readonly string[])[]): string[] => [...new Set(lists.flat())];
const REQUEST = '/passport/request';
const UPGRADE = '/passport/:tokenId/:serial/upgrade';
const PASSPORT = '/passport/:tokenId/:serial';
const REVOKE = '/admin/revoke';
const CODEC = ['/codec/decode', '/codec/encode'];
/** The A2A send routes (and those of them guarded by DID signature authentication). */
const A2A_SEND = ['/a2a/send', '/a2a/send-with-key', '/a2a/send-signed'];
const A2A_SIGNED = ['/a2a/send', '/a2a/send-signed'];
/** Domain trust routes of the ownership challenge and the on-chain attestation (issue 11 part 2). */
const TRUST_VERIFY = '/api/trust/:domain/verify-ownership';
const TRUST_ATTEST = '/api/trust/:domain/attest';
const TRUST_CHALLENGE = '/api/trust/:domain/challenge';
/** The poll URL of an attestation (the Location of attest's 202). */
const TRUST_ATTESTATION = '/api/trust/:domain/attestations/:snapshotHash';
/** The agent directory (issue 9): registration is DID-signed and runs a workflow. */
const AGENTS_REGISTER = '/agents/register';
const AGENTS_REBUILD = '/admin/rebuild-cache';
/** Marketplace routes (issue 10), api/routes/market/. */
const TASK = '/market/tasks/:taskId';
const step = (name: string) => `${TASK}/${name}`;
/** market routes behind DID signature headers whose body names the signing DID (posterDid, claimerDid) */
const MARKET_SIGNED = ['/market/tasks', step('claim'), step('deliver'), step('cancel'), step('increase-reward'), step('complete'), step('prepare-payment')];
/** market routes proving a party by a private key from the body (checked against the account's key) */
const MARKET_KEYED = ['/market/tasks/signed', step('claim-with-key'), step('deliver-with-key'), step('complete'), step('complete-with-key')];
/** market routes that run a step (an Update) of the task's workflow */
const MARKET_STEPS = ['/market/tasks', '/market/tasks/signed', step('claim'), step('claim-with-key'), step('deliver'), step('deliver-with-key'), step('cancel'), step('increase-reward'), step('complete'), step('complete-with-key'), step('verify')];
/** market routes that require the party's passport to be active and held on the ledger (403 passport_not_found) */
const MARKET_PASSPORT = ['/market/tasks', '/market/tasks/signed', step('claim'), step('claim-with-key'), step('prepare-payment')];
/** Registry keys (issue 12 part 1); a Bearer registry key or access token is checked on every route (keyed rate limit). */
const REGISTRY_REGISTER = '/api/v1/agents/register';
/** Events out (issue 28): the pull of a DID's own events, and the signed-in DID's webhooks. */
const EVENTS_PULL = '/agents/:did/events';
const WEBHOOK = '/webhooks/:id';
const WEBHOOKS = ['/webhooks', WEBHOOK, `${WEBHOOK}/deliveries`];
/** RFC 7591 dynamic client registration (issue 29): the same registration and per-IP cap as REGISTRY_REGISTER. */
const OAUTH_REGISTER = '/oauth/register';
/** Routes guarded by DID signature authentication whose request names the signing DID (the registry: when it names an owner and signs). */
const SIGNED_NAMED = [REQUEST, UPGRADE, ...A2A_SIGNED, TRUST_ATTEST, TRUST_VERIFY, AGENTS_REGISTER, ...MARKET_SIGNED, REGISTRY_REGISTER, EVENTS_PULL];
/** Routes guarded by DID signature authentication (/market/sign: any signed-in DID; a task read: signed by a party, optional since issue 26 item 3). */
const SIGNED = [...SIGNED_NAMED, '/market/sign', '/market/tasks/:taskId', ...WEBHOOKS];
/** Routes that run a workflow and wait for it. */
const WORKFLOW = [REQUEST, UPGRADE, REVOKE, ...A2A_SEND, TRUST_ATTEST, AGENTS_REGISTER, ...MARKET_STEPS];
const NONE: string[] = [];
/** Trust snapshot and rule catalog routes (issue 11 part 1). */
const TRUST_SNAPSHOT = '/api/trust/:domain';
const RULE = '/rules/:id';

export const SPEC_ERRORS = [
  { code: 'policy_refusal', http_status: 409, agent_impact: 'The request was refused by policy before any work was done.', hint_template: 'Choose another subject or workflow; {reason}', affected_routes: [AGENTS_REGISTER], recovery_action: 'choose_alternative', charge: 'never' },
  { code: 'insufficient_subject', http_status: 422, agent_impact: 'The subject cannot be evaluated as given.', hint_template: 'Provide a subject that can be evaluated: {detail}', affected_routes: NONE, recovery_action: 'change_request', charge: 'never' },
  { code: 'execution_failed', http_status: 502, agent_impact: 'A platform or upstream step failed; any settled amount is refunded automatically.', hint_template: 'Retry the request; the refund of {amount} is automatic', affected_routes: WORKFLOW, recovery_action: 'retry_immediately', charge: 'never' },
  { code: 'data_unavailable', http_status: 503, agent_impact: 'The live-data feed cannot serve now; refused before settlement.', hint_template: 'Retry shortly; free-tier answers may carry data_status stale since {stale_since}', affected_routes: NONE, recovery_action: 'retry_immediately', charge: 'never' },
  { code: 'passport_not_found', http_status: 404, agent_impact: 'The passport is missing or revoked.', hint_template: 'Check tokenId {tokenId} and serial {serial}, or request a new passport', affected_routes: [PASSPORT, UPGRADE, '/did/:did', REVOKE, ...A2A_SEND, TRUST_ATTEST, AGENTS_REGISTER, ...MARKET_PASSPORT, '/webhooks'], recovery_action: 'choose_alternative' },
  { code: 'passport_not_owned', http_status: 403, agent_impact: 'The wallet does not own this passport.', hint_template: 'Sign with the account that owns {tokenId}/{serial}', affected_routes: [UPGRADE, AGENTS_REGISTER], recovery_action: 'not_authorized' },
  { code: 'passport_payment_required', http_status: 402, agent_impact: 'An x402 payment is needed before the passport is issued.', hint_template: 'Pay {amount} to {payTo} through {facilitator} and retry with PAYMENT-SIGNATURE', affected_routes: [REQUEST, UPGRADE], recovery_action: 'wait_and_retry' },
  { code: 'passport_payment_failed', http_status: 400, agent_impact: 'The payment failed or was rejected by the facilitator.', hint_template: 'Build a fresh payment for the stated requirements: {reason}', affected_routes: [REQUEST, UPGRADE], recovery_action: 'retry_immediately' },
  { code: 'passport_already_exists', http_status: 409, agent_impact: 'The wallet already holds a passport.', hint_template: 'Use GET /passport/address/{accountId} or upgrade the existing passport', affected_routes: [REQUEST], recovery_action: 'choose_alternative' },
  { code: 'passport_tier_invalid', http_status: 400, agent_impact: 'The tier does not exist.', hint_template: 'Use one of bronze, silver, gold, platinum (GET /catalog)', affected_routes: [REQUEST, UPGRADE], recovery_action: 'change_request' },
  { code: 'passport_upgrade_not_eligible', http_status: 400, agent_impact: 'The tier move is not allowed.', hint_template: 'Choose a tier above {currentTier}', affected_routes: [UPGRADE], recovery_action: 'change_request' },
  { code: 'agent_already_registered', http_status: 409, agent_impact: 'The DID or name is already registered.', hint_template: 'Use another name or update the existing entry for {did}', affected_routes: [AGENTS_REGISTER], recovery_action: 'choose_alternative' },
  { code: 'agent_not_found', http_status: 404, agent_impact: 'No agent matches.', hint_template: 'Check the DID or filters (name, capability, skill)', affected_routes: ['/api/agent/:did/card', '/.well-known/webfinger', '/agents/:did'], recovery_action: 'change_request' },
  { code: 'agent_capability_invalid', http_status: 400, agent_impact: 'A capability is outside the valid set.', hint_template: 'Use capabilities from api_call, payment, data_provide, data_consume, orchestration', affected_routes: [AGENTS_REGISTER], recovery_action: 'change_request' },
  { code: 'auth_challenge_expired', http_status: 401, agent_impact: 'The challenge expired or was already used.', hint_template: 'Fetch a new challenge from GET /auth/challenge?did={did} and sign it', affected_routes: SIGNED, recovery_action: 'retry_immediately' },
  { code: 'auth_signature_invalid', http_status: 401, agent_impact: 'The signature check failed.', hint_template: 'Sign the exact challenge string with the key of {did}', affected_routes: SIGNED, recovery_action: 'change_request' },
  { code: 'auth_header_missing', http_status: 401, agent_impact: 'A signature header is missing.', hint_template: 'Send X-Service-DID, X-Service-Challenge and X-Service-Signature', affected_routes: SIGNED, recovery_action: 'change_request' },
  { code: 'auth_did_unresolved', http_status: 401, agent_impact: 'The DID cannot be resolved.', hint_template: 'Use a DID of the form did:hedera:{network}:{accountId} for an existing account', affected_routes: routes(SIGNED, '/a2a/send-with-key', MARKET_KEYED), recovery_action: 'change_request' },
  { code: 'market_task_not_found', http_status: 404, agent_impact: 'The task is missing.', hint_template: 'Check taskId {taskId} (GET /market/tasks)', affected_routes: ['/market/tasks/:taskId', '/market/tasks/:taskId/escrow-status', '/market/tasks/:taskId/claim', '/market/tasks/:taskId/claim-with-key', '/market/tasks/:taskId/deliver', '/market/tasks/:taskId/deliver-with-key', '/market/tasks/:taskId/complete', '/market/tasks/:taskId/complete-with-key', '/market/tasks/:taskId/cancel', '/market/tasks/:taskId/increase-reward', step('verify'), step('prepare-payment')], recovery_action: 'choose_alternative' },
  { code: 'market_task_already_claimed', http_status: 409, agent_impact: 'The task is already claimed.', hint_template: 'Pick another posted task', affected_routes: ['/market/tasks/:taskId/claim', '/market/tasks/:taskId/claim-with-key'], recovery_action: 'choose_alternative' },
  { code: 'market_task_not_claimed_by_agent', http_status: 403, agent_impact: 'The task is not claimed by this agent.', hint_template: 'Only the claimer of {taskId} may do this', affected_routes: ['/market/tasks/:taskId/deliver', '/market/tasks/:taskId/deliver-with-key'], recovery_action: 'change_request' },
  { code: 'a2a_recipient_not_found', http_status: 404, agent_impact: 'The recipient DID is missing or has no inbox.', hint_template: 'Check the recipient {to} (GET /agents/{to})', affected_routes: A2A_SEND, recovery_action: 'change_request' },
  { code: 'a2a_message_too_large', http_status: 413, agent_impact: 'The payload is over the maximum (256 KB).', hint_template: 'Send at most 256 KB; store larger payloads elsewhere and send a link', affected_routes: A2A_SEND, recovery_action: 'change_request' },
  { code: 'agent_key_invalid', http_status: 401, agent_impact: 'The Bearer key is missing or malformed.', hint_template: 'Send Authorization: Bearer apk_<key> as issued by POST /api/v1/agents/register', affected_routes: ALL, recovery_action: 'change_request' },
  { code: 'agent_key_revoked', http_status: 401, agent_impact: 'The key was revoked.', hint_template: 'Register again with POST /api/v1/agents/register', affected_routes: ALL, recovery_action: 'choose_alternative' },
  { code: 'register_rate_limited', http_status: 429, agent_impact: 'The daily per-IP registration cap is exceeded (24 h window).', hint_template: 'Retry after {resetAt}', affected_routes: [REGISTRY_REGISTER, OAUTH_REGISTER], recovery_action: 'wait_and_retry' },
  { code: 'sponsored_quota_exceeded', http_status: 429, agent_impact: 'The daily sponsored-mint budget is used up; it resets at the UTC day change.', hint_template: 'Retry after {resetAt} or register without owner', affected_routes: [REGISTRY_REGISTER], recovery_action: 'wait_and_retry' },
  { code: 'rate_limit_exceeded', http_status: 429, agent_impact: 'Over 60 requests per minute from this IP.', hint_template: 'Wait until X-RateLimit-Reset ({resetAt}) and retry', affected_routes: ALL, recovery_action: 'wait_and_retry' },
  { code: 'internal_server_error', http_status: 500, agent_impact: 'An unexpected error occurred.', hint_template: 'Retry; quote request id {requestId} if it persists', affected_routes: ALL, recovery_action: 'retry_immediately' },
  { code: 'service_unavailable', http_status: 503, agent_impact: 'Maintenance or ledger network trouble.', hint_template: 'Retry after 30 seconds', affected_routes: ALL, recovery_action: 'wait_and_retry' },
] as const satisfies readonly ErrorCatalogEntry[];

/** Protocol-level codes for failures the spec's catalog has no entry for (malformed requests, admin auth, ...). */
export const SERVICE_ERRORS = [
  { code: 'invalid_request', http_status: 400, agent_impact: 'The request is malformed: a field is missing, of the wrong type, or unknown.', hint_template: '{field}: {problem}', affected_routes: ALL, recovery_action: 'change_request' },
  { code: 'route_not_found', http_status: 404, agent_impact: 'No route matches this method and path.', hint_template: 'See GET /openapi.json for the routes', affected_routes: ALL, recovery_action: 'change_request' },
  { code: 'payload_too_large', http_status: 413, agent_impact: 'The request body is over the size limit.', hint_template: 'Send at most {limit} bytes', affected_routes: ALL, recovery_action: 'change_request' },
  { code: 'unsupported_media_type', http_status: 415, agent_impact: 'The body is not in a supported content type.', hint_template: 'Send Content-Type: application/json', affected_routes: ALL, recovery_action: 'change_request' },
  { code: 'admin_auth_required', http_status: 401, agent_impact: 'The admin route needs a token.', hint_template: 'Send Authorization: Bearer <admin token>', affected_routes: [REVOKE, ...CODEC, '/admin/contact-messages', AGENTS_REBUILD], recovery_action: 'not_authorized' },
  { code: 'admin_auth_invalid', http_status: 403, agent_impact: 'The admin token is wrong.', hint_template: 'Use the token whose sha256 is ADMIN_TOKEN_SHA256', affected_routes: [REVOKE, ...CODEC, '/admin/contact-messages', AGENTS_REBUILD], recovery_action: 'not_authorized' },
  { code: 'auth_did_mismatch', http_status: 403, agent_impact: 'The signed-in DID is not the DID named in the request.', hint_template: 'Sign in as {did} or name your own DID in the body', affected_routes: routes(SIGNED_NAMED, '/a2a/send-with-key', MARKET_KEYED), recovery_action: 'change_request' },
  { code: 'passport_already_revoked', http_status: 409, agent_impact: 'The passport is already revoked.', hint_template: 'Nothing to do: {tokenId}/{serial} was revoked at {revokedAt}', affected_routes: [REVOKE], recovery_action: 'no_action' },
  { code: 'trust_challenge_not_found', http_status: 404, agent_impact: 'No ownership challenge with this token exists for the domain and the signing DID (a challenge issued for another DID, or claimed by another DID, is not found).', hint_template: 'Get a challenge from GET /api/trust/{domain}/challenge and send its token', affected_routes: [TRUST_VERIFY], recovery_action: 'change_request' },
  { code: 'trust_challenge_expired', http_status: 400, agent_impact: 'The ownership challenge expired before it was proven.', hint_template: 'Get a new challenge from GET /api/trust/{domain}/challenge (valid 24 h)', affected_routes: [TRUST_VERIFY], recovery_action: 'retry_immediately' },
  { code: 'trust_ownership_not_proven', http_status: 403, agent_impact: 'Neither the DNS TXT record nor the well-known file holds the challenge value yet.', hint_template: 'Publish {dns_record} or serve {well_known_content} at {well_known_url}, then verify again', affected_routes: [TRUST_VERIFY], recovery_action: 'wait_and_retry' },
  { code: 'trust_domain_invalid', http_status: 400, agent_impact: 'The domain is not a public DNS name (IP literal, port, path or malformed label).', hint_template: 'Give a bare domain such as example.com: {reason}', affected_routes: [TRUST_SNAPSHOT, TRUST_CHALLENGE, TRUST_VERIFY, TRUST_ATTEST, TRUST_ATTESTATION], recovery_action: 'change_request' },
  { code: 'trust_domain_not_found', http_status: 404, agent_impact: 'The domain does not resolve to a public address (one answer for both: it does not tell which), so it cannot be scanned or proven.', hint_template: 'Check the spelling of {domain} and its A/AAAA records', affected_routes: [TRUST_SNAPSHOT, TRUST_VERIFY, TRUST_ATTEST], recovery_action: 'change_request' },
  { code: 'trust_ownership_required', http_status: 403, agent_impact: 'Attesting a domain needs a proven, unexpired ownership of it by the signing DID.', hint_template: 'Get a challenge from GET /api/trust/{domain}/challenge?did={did}, publish it, then POST /api/trust/{domain}/verify-ownership signed by {did}', affected_routes: [TRUST_ATTEST], recovery_action: 'change_request' },
  { code: 'trust_quota_exceeded', http_status: 429, agent_impact: 'A daily or hourly quota of the trust routes is used up (uncached scans per address or per registrable domain, new challenges per address, ownership checks per DID or address, attestations per DID).', hint_template: 'Retry after X-RateLimit-Reset ({resetAt}); cached snapshots stay free', affected_routes: [TRUST_SNAPSHOT, TRUST_CHALLENGE, TRUST_VERIFY, TRUST_ATTEST], recovery_action: 'wait_and_retry' },
  { code: 'trust_attestation_not_found', http_status: 404, agent_impact: 'No attestation of this snapshot hash exists for the domain.', hint_template: 'Attest with POST /api/trust/{domain}/attest; its 202 Location names the attestation to poll', affected_routes: [TRUST_ATTESTATION], recovery_action: 'change_request' },
  { code: 'trust_snapshot_failed', http_status: 503, agent_impact: 'The trust snapshot could not be generated now (DNS resolver failure or scan over its time budget).', hint_template: 'Retry in a few seconds', affected_routes: [TRUST_SNAPSHOT, TRUST_ATTEST], recovery_action: 'wait_and_retry' },
  { code: 'trust_rule_not_found', http_status: 404, agent_impact: 'No agent-readiness rule has this id.', hint_template: 'See the rule ids at /rules (AR-001 ...)', affected_routes: [RULE], recovery_action: 'change_request' },
  { code: 'idempotency_key_reused', http_status: 409, agent_impact: 'The Idempotency-Key was already used (within 24 h) for a different task post by this poster; nothing was created.', hint_template: 'Send a new Idempotency-Key for a new task, or resend the original body to get task {taskId}', affected_routes: ['/market/tasks', '/market/tasks/signed'], recovery_action: 'change_request', charge: 'never' },
  { code: 'auth_challenge_origin_mismatch', http_status: 401, agent_impact: "The signed challenge names another service's origin: a sign-in meant for another service was relayed here.", hint_template: 'Sign only challenges that name the origin you call: GET /auth/challenge?did={did} on {origin}', affected_routes: SIGNED, recovery_action: 'change_request' },
  { code: 'a2a_operator_budget_exceeded', http_status: 429, agent_impact: "The sender's daily budget of operator-paid message bytes on the deprecated /a2a/send is used up (it resets at the UTC day change).", hint_template: 'Send with POST /a2a/send-signed or /a2a/send-with-key (the sender pays, no daily budget), or retry after {resetAt}', affected_routes: ['/a2a/send'], recovery_action: 'choose_alternative' },
  { code: 'market_tier_required', http_status: 403, agent_impact: 'The marketplace is for gold and platinum passports (trust ladder: marketplace_participant); this passport is below.', hint_template: 'Upgrade {tokenId}/{serial} to gold (POST /passport/{tokenId}/{serial}/upgrade), then post or claim', affected_routes: ['/market/tasks', '/market/tasks/signed', step('claim'), step('claim-with-key')], recovery_action: 'change_request' },
  { code: 'market_unfunded_limit', http_status: 429, agent_impact: 'The poster has as many open unfunded tasks as allowed (MARKET_UNFUNDED_TASKS_MAX); nothing was posted.', hint_template: 'Fund (POST /market/tasks/signed funds at posting), complete or cancel one of your {open} unfunded tasks, or wait until {resetAt}', affected_routes: ['/market/tasks', '/market/tasks/signed'], recovery_action: 'wait_and_retry', charge: 'never' },
  { code: 'market_post_quota_exceeded', http_status: 429, agent_impact: 'The poster posted as many tasks in the last 24 h as allowed (MARKET_POSTS_PER_DAY); nothing was posted.', hint_template: 'Retry after {resetAt}', affected_routes: ['/market/tasks', '/market/tasks/signed'], recovery_action: 'wait_and_retry', charge: 'never' },
  { code: 'market_escrow_underfunded', http_status: 409, agent_impact: "The task's escrow holds less than its raised price (the top-up was never funded); nothing was paid.", hint_template: 'Fund the top-up: complete again with posterPrivateKey, which signs top-up schedule {scheduleId}; or cancel to get the escrow back', affected_routes: [step('complete'), step('complete-with-key')], recovery_action: 'change_request' },
  { code: 'webhook_not_found', http_status: 404, agent_impact: 'The signed-in DID has no webhook with this id (never created, deleted, or another DID\'s).', hint_template: 'GET /webhooks lists your webhooks', affected_routes: [WEBHOOK, `${WEBHOOK}/deliveries`], recovery_action: 'change_request' },
  { code: 'webhook_limit_reached', http_status: 409, agent_impact: 'The DID holds as many webhooks as allowed (WEBHOOKS_PER_DID, disabled ones included); nothing was created.', hint_template: 'Delete one with DELETE /webhooks/{id} (GET /webhooks lists them)', affected_routes: ['/webhooks'], recovery_action: 'change_request' },
  { code: 'request_pending', http_status: 202, agent_impact: 'The work was accepted and is still running.', hint_template: 'Poll {statusUrl}', affected_routes: [...WORKFLOW, AGENTS_REBUILD], recovery_action: 'wait_and_retry' },
] as const satisfies readonly ErrorCatalogEntry[];

export type SpecErrorCode = (typeof SPEC_ERRORS)[number]['code'];
export type ServiceErrorCode = (typeof SERVICE_ERRORS)[number]['code'];
export type ErrorCode = SpecErrorCode | ServiceErrorCode;

const BY_CODE = new Map<string, ErrorCatalogEntry>(
  [...SPEC_ERRORS, ...SERVICE_ERRORS].map((e) => [e.code, e as ErrorCatalogEntry]),
);

export function errorEntry(code: ErrorCode): ErrorCatalogEntry {
  const entry = BY_CODE.get(code);
  if (!entry) throw new Error(`error code not in catalog: ${code}`);
  return entry;
}

export function isCatalogCode(code: string): code is ErrorCode {
  return BY_CODE.has(code);
}

/** Retrying the same request may help only for these recovery actions. */
export function isRetryable(entry: ErrorCatalogEntry): boolean {
  return entry.recovery_action === 'retry_immediately' || entry.recovery_action === 'wait_and_retry';
}
