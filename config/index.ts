/**
 * The one place the environment is read. Every variable is parsed with zod; start-up fails with
 * one line per missing or malformed variable so an operator can fix them all in one go.
 * .env.example documents each variable.
 */
import { createPrivateKey } from 'node:crypto';
import ipaddr from 'ipaddr.js';
import { z } from 'zod';

const port = z.coerce.number().int().min(0).max(65535);
const bool = z
  .enum(['true', 'false', '1', '0', 'yes', 'no'])
  .transform((v) => v === 'true' || v === '1' || v === 'yes');
const hex64 = z.string().regex(/^[0-9a-fA-F]{64}$/, 'must be 64 hex characters (32 bytes)');

/** True when the text is an Ed25519 private key as PKCS#8 PEM or PKCS#8 DER hex (TRUST_SIGNING_KEY). */
export function isEd25519PrivateKey(text: string): boolean {
  try {
    const key = text.includes('-----BEGIN') ? createPrivateKey(text) : /^[0-9a-fA-F]+$/.test(text) ? createPrivateKey({ key: Buffer.from(text, 'hex'), format: 'der', type: 'pkcs8' }) : null;
    return key?.asymmetricKeyType === 'ed25519';
  } catch {
    return false;
  }
}

/** An IPv4 or IPv6 address, or a CIDR range of either. */
function isAddressOrCidr(text: string): boolean {
  if (text.includes('/')) {
    try {
      ipaddr.parseCIDR(text);
      return true;
    } catch {
      return false;
    }
  }
  return ipaddr.isValid(text);
}

/**
 * TRUST_PROXY: whose X-Forwarded-For to believe, in the forms Fastify 5 supports safely. false (or
 * unset): nobody's, the client is the socket's address; a comma-separated list of proxy addresses and
 * CIDR ranges: the proxies at those addresses (the client is the nearest address that is not one of
 * them); true: everyone's, so any client can claim any address (refused in production). A hop count
 * is refused: it cannot tell a proxy from a client that reaches the API directly, which is why
 * Fastify 5.12 ignores it (trusts nobody) instead.
 */
export const trustProxySetting = z
  .string()
  .trim()
  .transform((text, ctx): boolean | string[] => {
    const lower = text.toLowerCase();
    if (lower === 'false' || lower === 'no' || lower === '0') return false;
    if (lower === 'true' || lower === 'yes') return true;
    if (/^\d+$/.test(text)) {
      ctx.addIssue({ code: 'custom', message: 'a hop count cannot tell a proxy from a client that reaches the API directly: give the proxies\' addresses or CIDR ranges (e.g. 10.0.0.0/8,127.0.0.1)' });
      return z.NEVER;
    }
    const list = text.split(',').map((a) => a.trim()).filter(Boolean);
    const bad = list.filter((a) => !isAddressOrCidr(a));
    if (!list.length || bad.length) {
      ctx.addIssue({ code: 'custom', message: `must be false or the proxies' addresses/CIDR ranges separated by commas (e.g. 10.0.0.0/8,127.0.0.1)${bad.length ? `; not an address: ${bad.join(', ')}` : ''}` });
      return z.NEVER;
    }
    return list;
  });

export const configSchema = z.object({
  /**
   * production unless told otherwise (issue 26 item 5: fail closed): plaintext Temporal payloads refused,
   * /codec only with the admin token, the start-up checks below. `npm run dev` sets development for the
   * processes it starts, the tests set test (or development); nothing else should.
   */
  NODE_ENV: z.enum(['development', 'test', 'production']).default('production'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Successful answers slower than this get their access line at info; faster ones at debug (docs/benchmarks.md). */
  ACCESS_LOG_SLOW_MS: z.coerce.number().int().min(0).default(500),

  // HTTP API
  HOST: z.string().default('127.0.0.1'),
  PORT: port.default(3000),
  /** the service's public URL: links, OpenAPI servers, and the origin sign-in challenges name (required in production) */
  PUBLIC_BASE_URL: z.url({ protocol: /^https?$/, error: 'must be an http(s) URL' }).optional(),
  CORS_ORIGINS: z.string().default('*'),
  /** whose X-Forwarded-For to believe: false, or the proxies' addresses/CIDRs (trustProxySetting); true is refused in production */
  TRUST_PROXY: trustProxySetting.default(false),
  RATE_LIMIT_MAX: z.coerce.number().int().positive().default(60),
  RATE_LIMIT_WINDOW_MS: z.coerce.number().int().positive().default(60_000),
  REDIS_URL: z.url().optional(),
  ADMIN_TOKEN_SHA256: hex64.optional(),
  /** How often each API instance deletes expired sign-in challenges. */
  AUTH_CHALLENGE_SWEEP_MS: z.coerce.number().int().min(100).default(60_000),

  // PostgreSQL
  DATABASE_URL: z.url().optional(),

  // Temporal
  TEMPORAL_ADDRESS: z.string().optional(),
  TEMPORAL_NAMESPACE: z.string().default('default'),
  TEMPORAL_TASK_QUEUE: z.string().default('agent-passport'),
  TEMPORAL_TLS: bool.default(false),
  TEMPORAL_API_KEY: z.string().optional(),
  TEMPORAL_CLI_PATH: z.string().optional(),
  /** retention of closed workflows in TEMPORAL_NAMESPACE, set by `npm run temporal:setup` (days) */
  TEMPORAL_NAMESPACE_RETENTION_DAYS: z.coerce.number().min(1).max(3650).default(30),
  PAYLOAD_CODEC_KEY: hex64.optional(),
  CODEC_CORS_ORIGIN: z.string().default('http://localhost:8233'),

  // Hedera ledger
  HEDERA_NETWORK: z.enum(['local', 'testnet', 'mainnet', 'previewnet']).default('local'),
  HEDERA_OPERATOR_ID: z.string().regex(/^\d+\.\d+\.\d+$/).optional(),
  HEDERA_OPERATOR_KEY: z.string().optional(),
  HEDERA_MIRROR_URL: z.url().optional(),
  LOCALNET_CONFIG_PATH: z.string().default('.data/localnet.json'),
  /** The marketplace escrow account (only escrowed task money); default: the deployment file's `escrow` */
  ESCROW_ACCOUNT_ID: z.string().regex(/^\d+\.\d+\.\d+$/).optional(),
  /** The escrow account's private key (DER hex, or 0x-hex ECDSA): signs escrow payouts and refunds. A secret: worker only */
  ESCROW_PRIVATE_KEY: z.string().optional(),
  FACILITATOR_URL: z.url().optional(),
  MARKET_FEE_BPS: z.coerce.number().int().min(0).max(10_000).default(250),
  // Marketplace escrow promises and posting caps (issue 19 item 7, issue 20 items 2, 4, 10; docs/costs.md "Marketplace").
  // Default claim window (s): a claim with no delivery lapses back to posted; a poster may choose 1-720 h per task (claimWindowHours).
  MARKET_CLAIM_WINDOW_S: z.coerce.number().int().min(1).max(30 * 86_400).default(86_400),
  // Default review window (s) of an escrow task after delivery: with no complete and no cancel the escrow is released to the claimer (reviewWindowHours per task).
  MARKET_REVIEW_WINDOW_S: z.coerce.number().int().min(1).max(30 * 86_400).default(259_200),
  // Funding window (s): an escrow task still unfunded this long after posting is cancelled (its schedule renewals end with it).
  MARKET_FUNDING_WINDOW_S: z.coerce.number().int().min(1).max(30 * 86_400).default(86_400),
  // Open unfunded tasks (escrow not funded, or no escrow) per poster; the next post answers 429 market_unfunded_limit.
  MARKET_UNFUNDED_TASKS_MAX: z.coerce.number().int().min(1).default(10),
  // Tasks a poster may post per rolling 24 h (429 market_post_quota_exceeded).
  MARKET_POSTS_PER_DAY: z.coerce.number().int().min(1).default(100),
  // increase-reward steps per task (each replaces an escrow schedule at the operator's cost).
  MARKET_REWARD_INCREASES_MAX: z.coerce.number().int().min(1).max(100).default(5),
  // Verifier runs per delivery: a verdict is reused; an inconclusive run (verifier unreachable) runs again at most this many times in all...
  MARKET_VERIFY_RUNS_MAX: z.coerce.number().int().min(1).max(100).default(5),
  // ...and not sooner than this many seconds after the last run.
  MARKET_VERIFY_RETRY_S: z.coerce.number().int().min(1).default(300),
  // Closed tasks each API process holds in memory per closed status (completed, cancelled), newest first, besides every open task:
  // GET /market/tasks pages within them are answered from memory, deeper pages read PostgreSQL (issue 31; docs/costs.md).
  MARKET_CLOSED_IN_MEMORY: z.coerce.number().int().min(1).max(1_000_000).default(2_000),

  /** webhook subscriptions one DID may hold (issue 28; POST /webhooks answers 409 webhook_limit_reached beyond) */
  WEBHOOKS_PER_DID: z.coerce.number().int().min(1).max(100).default(5),
  /** hours a subscription's deliveries are retried (backoff) before it is disabled with its reason (issue 28) */
  WEBHOOK_RETRY_HOURS: z.coerce.number().positive().max(24 * 30).default(72),

  /** bytes of messages per sender DID per UTC day the operator pays for on the deprecated POST /a2a/send (0: none; the sender-paid routes have no budget; at most 2^31-1, a quota_counters count) */
  A2A_OPERATOR_DAILY_BYTES: z.coerce.number().int().min(0).max(2_147_483_647).default(65_536),

  // x402 payments (issue 23): settled inside the passport workflows; the reconciler settles the rest
  /** a payment still without a passport, an upgrade, a refund or a failure this long after it was recorded is settled by the payment reconciler */
  PAYMENT_RECONCILE_AFTER_MS: z.coerce.number().int().min(1_000).default(600_000),
  /** how often the payment reconciler's schedule runs a pass (one per task queue, started by the worker) */
  PAYMENT_RECONCILE_EVERY_MS: z.coerce.number().int().min(1_000).default(60_000),

  // stranded escrow (issue 26 item 4): tasks whose workflow is closed are settled by the escrow reconciler
  /** how often the escrow reconciler's schedule runs a pass (one per task queue, started by the worker): with the grace, a terminated funded task is refunded within 10 minutes */
  ESCROW_RECONCILE_EVERY_S: z.coerce.number().int().min(1).max(86_400).default(300),
  /** a task workflow closed (or unknown to Temporal and its task unchanged) for less than this is left alone: it may be reset or between runs */
  ESCROW_RECONCILE_GRACE_S: z.coerce.number().int().min(0).max(86_400).default(300),
  /** stranded tasks settled per pass at most (each: up to two ScheduleDeletes, one or two escrow transfers, one topic message, all paid by the operator) */
  ESCROW_RECONCILE_MAX: z.coerce.number().int().min(1).max(1_000).default(20),
  /** open tasks per pass whose workflow is looked up one by one (finds workflows Temporal no longer lists) */
  ESCROW_RECONCILE_SAMPLE: z.coerce.number().int().min(0).max(1_000).default(20),

  // directory liveness (issue 29 item 6): the worker's directoryProbe schedule
  /** an active directory entry's endpoint (or card) is probed at most this often (the dev launcher sets 60) */
  DIRECTORY_PROBE_EVERY_S: z.coerce.number().int().min(10).max(604_800).default(3600),
  /** entries probed per pass at most (a pass runs every min(DIRECTORY_PROBE_EVERY_S, 300) s; each probe makes at most two fetches) */
  DIRECTORY_PROBE_BATCH: z.coerce.number().int().min(1).max(1_000).default(100),
  /** an entry whose endpoint and card have not answered for this long is flagged stale */
  DIRECTORY_STALE_AFTER_S: z.coerce.number().int().min(60).max(31_536_000).default(86_400),
  /**
   * Prefix of the passport, A2A and reconciler workflow ids this deployment starts (default none).
   * Only for deployments sharing one Temporal namespace with another whose ledger ids coincide (tests
   * run several localnets against one dev server).
   */
  WORKFLOW_ID_SCOPE: z.string().regex(/^[A-Za-z0-9._:/-]{1,120}$/, 'must be 1-120 of A-Z a-z 0-9 . _ : / -').optional(),
  /** tests only (honoured only when NODE_ENV=test): the API SIGKILLs itself at this point of a paid passport request */
  API_TEST_KILL_POINT: z.enum(['after-verify', 'after-record', 'after-start', 'after-settle']).optional(),

  // EVM
  EVM_RPC_URL: z.url().optional(),
  EVM_CHAIN_ID: z.coerce.number().int().positive().optional(),
  PASSPORT_CONTRACT_ADDRESS: z.string().regex(/^0x[0-9a-fA-F]{40}$/).optional(),
  ESCROW_CONTRACT_ADDRESS: z.string().regex(/^0x[0-9a-fA-F]{40}$/).optional(),
  INDEXER_CONFIRMATIONS: z.coerce.number().int().min(0).default(2),
  INDEXER_MAX_BLOCK_RANGE: z.coerce.number().int().positive().default(2_000),
  INDEXER_START_BLOCK: z.coerce.number().int().min(0).default(0),
  INDEXER_POLL_INTERVAL_MS: z.coerce.number().int().positive().default(2_000),

  // Trust snapshots (GET /api/trust/{domain}): cache life, time budget of one scan, signing key
  TRUST_SNAPSHOT_TTL_MS: z.coerce.number().int().min(0).default(300_000),
  TRUST_CHECK_BUDGET_MS: z.coerce.number().int().min(100).max(60_000).default(8_000),
  /** Ed25519 private key signing the snapshots: PKCS#8 PEM, or PKCS#8 DER as hex. A secret */
  TRUST_SIGNING_KEY: z.string().refine(isEd25519PrivateKey, 'must be an Ed25519 private key (PKCS#8 PEM or PKCS#8 DER hex)').optional(),
  /** key_id of TRUST_SIGNING_KEY in the snapshots and /.well-known/http-message-signatures-directory */
  TRUST_SIGNING_KEY_ID: z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 . _ : -').optional(),

  // Registry keys
  REGISTER_DAILY_CAP_PER_IP: z.coerce.number().int().positive().default(5),
  /** POST /contact messages per address per rolling hour */
  CONTACT_HOURLY_CAP_PER_IP: z.coerce.number().int().positive().default(5),
  SPONSORED_DAILY_BUDGET: z.coerce.number().int().min(0).default(100),
  /** sponsored registrations one owner DID may take of the day's budget (UTC day) */
  SPONSORED_DAILY_PER_OWNER: z.coerce.number().int().min(0).default(5),
  /** the keyed free tier: requests per window counted against a valid registry key (or its OAuth token) instead of the IP */
  REGISTRY_KEY_RATE_LIMIT_MAX: z.coerce.number().int().positive().default(300),
  REGISTRY_KEY_RATE_LIMIT_WINDOW_MS: z.coerce.number().int().positive().default(60_000),
  /** Ed25519 private key signing the OAuth access tokens (PKCS#8 PEM or DER hex); without it each process generates one. A secret */
  OAUTH_SIGNING_KEY: z.string().refine(isEd25519PrivateKey, 'must be an Ed25519 private key (PKCS#8 PEM or PKCS#8 DER hex)').optional(),
  /** kid of OAUTH_SIGNING_KEY in the tokens and the jwks_uri document */
  OAUTH_SIGNING_KEY_ID: z.string().regex(/^[A-Za-z0-9._:-]{1,64}$/, 'must be 1-64 of A-Z a-z 0-9 . _ : -').optional(),
  /** lifetime of an access token from POST /oauth/token, seconds */
  OAUTH_TOKEN_TTL_S: z.coerce.number().int().min(30).max(86_400).default(600),

  // Outbound fetches of client URLs (net/safeFetch.ts): true lifts the public-address rule (tests only; refused in production)
  TRUST_ALLOW_PRIVATE: bool.default(false),
  /** tests only (refused in production), honoured with TRUST_ALLOW_PRIVATE: "a.test=http://127.0.0.1:4321,b.test=..." sends a domain's trust fetches to a loopback origin */
  TRUST_FETCH_ORIGINS: z.string().optional(),

  // Domain ownership challenges and attestations (issue 11 part 2)
  /** DNS servers (ip or ip:port, comma-separated) for the ownership TXT lookups; default the system's resolvers */
  TRUST_DNS_SERVERS: z.string().optional(),
  /** how long a challenge is valid (SPEC/DESIGN: 24 h) */
  TRUST_CHALLENGE_TTL_MS: z.coerce.number().int().min(1_000).default(86_400_000),
  /** how long a proven ownership counts (attest needs one); a new challenge proven the same way renews it (default 30 days) */
  TRUST_OWNERSHIP_TTL_MS: z.coerce.number().int().min(1_000).default(30 * 86_400_000),
  /** new ownership challenges (rows of domain_challenges, with or without ?did=) per client address per UTC day; a DID's open one handed out again does not count */
  TRUST_CHALLENGES_DAILY_PER_IP: z.coerce.number().int().min(0).default(100),
  /** checks run by POST /api/trust/{domain}/verify-ownership per signed DID per UTC day (each: 2 DNS queries, one fetch of at most 4 KB) */
  TRUST_VERIFY_DAILY_PER_DID: z.coerce.number().int().min(0).default(30),
  /** the same, per client address per UTC day */
  TRUST_VERIFY_DAILY_PER_IP: z.coerce.number().int().min(0).default(60),
  /** new attestations (one EVM transaction each, paid by the service) per attesting DID per UTC day */
  TRUST_ATTEST_DAILY_PER_DID: z.coerce.number().int().min(0).default(10),
  /** uncached trust scans (12 fetches of at most 256 KiB each) per client address per UTC day; cached snapshots are free */
  TRUST_SCANS_DAILY_PER_IP: z.coerce.number().int().min(0).default(50),
  /** uncached trust scans per registrable domain (all its subdomains together, all callers) per hour: bounds wildcard subdomains */
  TRUST_SCANS_HOURLY_PER_SITE: z.coerce.number().int().min(0).default(30),
  /** EVM key (0x + 64 hex) that sends attestDomain; must be a minter of the passport contract. A secret: worker only */
  EVM_ATTESTER_KEY: z.string().regex(/^0x[0-9a-fA-F]{64}$/, 'must be 0x and 64 hex characters').optional(),

  // Operators' telemetry (issue 30; docs/operations.md). The OTEL_* names are the OpenTelemetry specification's:
  // the ones below are checked here; the SDK reads the rest itself (OTEL_EXPORTER_OTLP_HEADERS, OTEL_TRACES_SAMPLER,
  // OTEL_TRACES_SAMPLER_ARG, OTEL_RESOURCE_ATTRIBUTES, OTEL_BSP_*), as the specification names them.
  /** the Prometheus endpoint of this process (GET /metrics, text format); unset: none; 0: a free port (tests) */
  METRICS_PORT: port.optional(),
  /** its address: loopback by default, so only a scraper on the same host (or a sidecar) reads it */
  METRICS_HOST: z.string().default('127.0.0.1'),
  /** how often the worker recomputes the business gauges (escrow drift, payments awaiting reconciliation, refunds, the reconciler's last run) */
  METRICS_BUSINESS_EVERY_MS: z.coerce.number().int().min(1_000).default(30_000),
  /** where traces go (OTLP); unset (and no OTEL_EXPORTER_OTLP_TRACES_ENDPOINT): no tracing at all */
  OTEL_EXPORTER_OTLP_ENDPOINT: z.url().optional(),
  OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: z.url().optional(),
  /** OTLP transport (specification default http/protobuf; http/json; grpc) */
  OTEL_EXPORTER_OTLP_PROTOCOL: z.enum(['http/protobuf', 'http/json', 'grpc']).default('http/protobuf'),
  OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: z.enum(['http/protobuf', 'http/json', 'grpc']).optional(),
  /** service.name of the spans (default agent-passport-api / agent-passport-worker) */
  OTEL_SERVICE_NAME: z.string().min(1).optional(),
  /** true: no tracing even with an endpoint */
  OTEL_SDK_DISABLED: bool.default(false),
});

export type Config = z.infer<typeof configSchema>;

/** Which process reads the configuration: decides what production cannot start without. */
export type ConfigRole = 'api' | 'worker';

/**
 * Variables a production process refuses to start without (NODE_ENV=production), so it never
 * comes up with routes missing or the codec open: the public base URL (the origin sign-in challenges
 * name and signatures are checked against; a Host header is the client's own claim), the admin token digest, the payload key, the
 * database, the Temporal cluster, the trust snapshot signing key (api) and the ledger (operator
 * account, mirror, facilitator; the operator and escrow keys for the worker only, which signs every
 * ledger write; the deployment file at LOCALNET_CONFIG_PATH is checked at start-up by ledger/deployment.ts).
 */
export const PRODUCTION_REQUIRED: Record<ConfigRole, readonly (keyof Config)[]> = {
  api: ['PUBLIC_BASE_URL', 'ADMIN_TOKEN_SHA256', 'PAYLOAD_CODEC_KEY', 'DATABASE_URL', 'TEMPORAL_ADDRESS', 'HEDERA_OPERATOR_ID', 'HEDERA_MIRROR_URL', 'FACILITATOR_URL', 'TRUST_SIGNING_KEY', 'TRUST_SIGNING_KEY_ID', 'OAUTH_SIGNING_KEY', 'OAUTH_SIGNING_KEY_ID'],
  worker: ['PAYLOAD_CODEC_KEY', 'DATABASE_URL', 'TEMPORAL_ADDRESS', 'HEDERA_OPERATOR_ID', 'HEDERA_OPERATOR_KEY', 'HEDERA_MIRROR_URL', 'ESCROW_PRIVATE_KEY'],
};

/**
 * Keys a production process of the role refuses to hold (issue 26 item 9): the API signs nothing with
 * the service's accounts (the worker signs every ledger write, the operator-paid /a2a/send included),
 * so an API that is broken into holds no key to the money.
 */
export const PRODUCTION_REFUSED: Record<ConfigRole, readonly (keyof Config)[]> = {
  api: ['HEDERA_OPERATOR_KEY', 'ESCROW_PRIVATE_KEY'],
  worker: [],
};

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Switches refused when NODE_ENV=production (with or without a role), one line each: each would let a
 * client choose what the service trusts.
 */
function productionRefusals(config: Config, cleaned: Record<string, string | undefined>): string[] {
  const refused: string[] = [];
  // X-Forwarded-For from anyone would let every client pick the address its limits are counted by.
  if (config.TRUST_PROXY === true) {
    refused.push('TRUST_PROXY: true trusts any X-Forwarded-For, which is refused when NODE_ENV=production; give the addresses or CIDR ranges of the proxies in front of the API');
  }
  // The SSRF guard's off switches (tests only): with them a client URL reaches the service's own network.
  if (config.TRUST_ALLOW_PRIVATE) {
    refused.push('TRUST_ALLOW_PRIVATE: lets client URLs reach private and loopback addresses (tests only), which is refused when NODE_ENV=production; unset it');
  }
  if (cleaned.TRUST_FETCH_ORIGINS !== undefined) {
    refused.push('TRUST_FETCH_ORIGINS: sends trust fetches to chosen origins (tests only), which is refused when NODE_ENV=production; unset it');
  }
  return refused;
}

/**
 * Parses an environment (process.env by default); throws ConfigError listing every problem. NODE_ENV
 * unset is production. With a role, production also requires that role's PRODUCTION_REQUIRED
 * variables (scripts such as migrate pass no role and need only what they use) and refuses its
 * PRODUCTION_REFUSED keys; with or without one, production refuses the switches of productionRefusals.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env, opts: { role?: ConfigRole } = {}): Config {
  // Empty strings mean "unset": .env files often carry `NAME=` lines.
  const cleaned = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = configSchema.safeParse(cleaned);
  // Checked on the raw environment, so a malformed variable elsewhere does not hide these lines.
  const production = (cleaned.NODE_ENV ?? 'production') === 'production';
  const missing =
    opts.role && production
      ? PRODUCTION_REQUIRED[opts.role].filter((name) => cleaned[name] === undefined).map((name) => `${name}: missing (required when NODE_ENV=production)`)
      : [];
  if (opts.role && production) {
    for (const name of PRODUCTION_REFUSED[opts.role].filter((n) => cleaned[n] !== undefined)) {
      missing.push(`${name}: refused for the ${opts.role} when NODE_ENV=production (only the worker signs ledger writes); give it to the worker alone`);
    }
  }
  if (production && parsed.success) missing.push(...productionRefusals(parsed.data, cleaned));
  if (parsed.success && !missing.length) return parsed.data;
  const problems = (parsed.success ? [] : parsed.error.issues).map((issue) => {
    const name = issue.path.join('.');
    return cleaned[name] === undefined ? `${name}: missing (${issue.message})` : `${name}: ${issue.message}`;
  });
  throw new ConfigError([...problems, ...missing]);
}

/**
 * How agents' own URLs (A2A cards, endpoints: registration and the liveness probe) are fetched: public
 * addresses only, plus loopback in development (NODE_ENV=development: agents run on the developer's
 * machine), plus any address with TRUST_ALLOW_PRIVATE (tests only).
 */
export function agentFetchOptions(config: Pick<Config, 'NODE_ENV' | 'TRUST_ALLOW_PRIVATE'>): { allowPrivate: boolean; allowLoopback: boolean } {
  return { allowPrivate: config.TRUST_ALLOW_PRIVATE, allowLoopback: config.NODE_ENV === 'development' };
}

/**
 * TRUST_FETCH_ORIGINS as a map domain -> origin, empty unless TRUST_ALLOW_PRIVATE (tests only; both refused in production):
 * "a.test=http://127.0.0.1:4321" makes the trust fetches of https://a.test/... go to that origin.
 */
export function trustFetchOrigins(config: Pick<Config, 'TRUST_ALLOW_PRIVATE' | 'TRUST_FETCH_ORIGINS'>): Record<string, string> {
  const out: Record<string, string> = {};
  if (!config.TRUST_ALLOW_PRIVATE) return out;
  for (const pair of (config.TRUST_FETCH_ORIGINS ?? '').split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = pair.indexOf('=');
    if (eq > 0) out[pair.slice(0, eq).trim().toLowerCase()] = pair.slice(eq + 1).trim().replace(/\/+$/, '');
  }
  return out;
}

/** TRUST_DNS_SERVERS as a list (empty: the system's resolvers). */
export function trustDnsServers(config: Pick<Config, 'TRUST_DNS_SERVERS'>): string[] {
  return (config.TRUST_DNS_SERVERS ?? '').split(',').map((s) => s.trim()).filter(Boolean);
}
