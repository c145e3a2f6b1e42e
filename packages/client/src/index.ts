/**
 * The agent-passport client: a typed openapi-fetch client over the generated schema (schema.d.ts,
 * `npm run client:generate`) plus what the OpenAPI document cannot express: DID sign-in headers,
 * paying x402 requirements in HBAR, polling a 202, and building + signing the send-signed A2A topic
 * message and the marketplace completion transfer on the agent's side (the key never leaves it).
 *
 * The private key is only held in memory by this object; nothing here logs or returns it.
 */
import { randomUUID } from 'node:crypto';
import createClient, { type Client } from 'openapi-fetch';
import { AccountId, TopicMessageSubmitTransaction, Transaction, TransactionId } from '@hashgraph/sdk';
import type { components, paths } from './schema.js';
import { parsePrivateKey, signBytes, signTransaction, type KeyType } from '@agent-passport/core/keys';
import { createPayingFetch } from '@agent-passport/core/x402/clientScheme';
import { A2A_CHUNK_BYTES, encodeEnvelope, envelopeOf } from '@agent-passport/core/a2a';
import { challengeProblem, originOf } from '@agent-passport/core/signInChallenge';
import { DEFAULT_MAX_WAIT_MS, patientFetch } from './patientFetch.js';

export { DEFAULT_MAX_WAIT_MS, patientFetch, retryDelayMs } from './patientFetch.js';

export type { paths } from './schema.js';
export type ApiClient = Client<paths>;
/** An event as pull returns it and webhooks deliver it (issue 28). */
export type AgentEvent = components['schemas']['Event'];
export type EventPage = components['schemas']['EventPage'];
export type Webhook = components['schemas']['Webhook'];
export type WebhookCreated = components['schemas']['WebhookCreated'];
type Json = Record<string, any>;
/** The query parameters of a GET route. */
export type Query<P extends keyof paths> = paths[P] extends { get: { parameters: { query?: infer Q } } } ? NonNullable<Q> : never;

/** The agent's identity and key (key material stays in memory). */
export interface AgentIdentity {
  accountId: string;
  /** did:hedera:{network}:{accountId}; default derived from `network` */
  did?: string;
  privateKey: string;
  keyType?: KeyType;
}

export interface AgentClientOptions {
  baseUrl: string;
  agent?: AgentIdentity;
  /** Hedera network name of the DIDs (default local) */
  network?: 'local' | 'testnet' | 'previewnet' | 'mainnet';
  /** the node account id client-built transactions are frozen for (default 0.0.3) */
  nodeAccountId?: string;
  /** the a2a topic id (needed to build send-signed messages): .data/localnet.json topics.a2a */
  a2aTopicId?: string;
  /** refuse to pay more than this per x402 payment (HBAR, default 600) */
  maxPaymentHbar?: number;
  /** progress lines for long operations (paying, polling, waiting out a busy service) */
  onProgress?: (line: string) => void;
  fetch?: typeof globalThis.fetch;
  /**
   * The most time (ms) one request may spend waiting out retryable 429/503 answers that say when to
   * come back (Retry-After, X-RateLimit-Reset), with a progress line per wait; default 60000, 0: never wait.
   */
  maxWaitMs?: number;
}

/** A non-2xx answer of the API: { error, code, retryable?, hint? } plus the status. */
export class ApiRequestError extends Error {
  constructor(
    readonly status: number,
    readonly body: Json,
  ) {
    super(`${status} ${body?.code ?? ''}: ${body?.error ?? JSON.stringify(body)}`);
  }
}

/** The typed client alone (no key): every route of /openapi.json. */
export function createApiClient(baseUrl: string, fetchImpl: typeof globalThis.fetch = globalThis.fetch): ApiClient {
  return createClient<paths>({ baseUrl, fetch: (req) => fetchImpl(req) });
}

/** The server's challenge was not signed: not of the documented form, or not for this DID, this service or now. */
export class UnsafeChallengeError extends Error {
  constructor(readonly reason: string) {
    super(`refusing to sign: ${reason}`);
    this.name = 'UnsafeChallengeError';
  }
}

/**
 * X-Service-* sign-in headers: GET /auth/challenge, sign its exact text with the account key. The
 * text is signed only when it is a challenge of the documented form (@agent-passport/core/signInChallenge, packages/core/src/signInChallenge.ts) for
 * this DID, naming the origin of `baseUrl` (the service called), and not expired: anything else
 * throws UnsafeChallengeError, so a server can never make the key sign other bytes, and a sign-in
 * for one service cannot be relayed to another.
 */
export async function signInHeaders(baseUrl: string, agent: { did: string; privateKey: string; keyType?: KeyType }, fetchImpl = globalThis.fetch): Promise<Record<string, string>> {
  const origin = originOf(baseUrl);
  if (!origin) throw new UnsafeChallengeError(`${baseUrl} is not an http(s) URL`);
  const res = await fetchImpl(`${baseUrl}/auth/challenge?did=${encodeURIComponent(agent.did)}`);
  const body = (await res.json()) as Json;
  if (!res.ok) throw new ApiRequestError(res.status, body);
  const challenge = typeof body.challenge === 'string' ? body.challenge : '';
  const problem = challengeProblem(challenge, { did: agent.did, origin, now: Date.now() });
  if (problem) throw new UnsafeChallengeError(problem);
  const key = parsePrivateKey(agent.privateKey, agent.keyType);
  return {
    'x-service-did': agent.did,
    'x-service-challenge': challenge,
    'x-service-signature': Buffer.from(signBytes(key, challenge)).toString('hex'),
  };
}

/**
 * Polls a 202 request_pending answer's Location until `done(body)` holds (default: a 200 answer).
 * Answers the last body.
 */
export async function pollPending(
  baseUrl: string,
  location: string,
  opts: { done?: (status: number, body: Json) => boolean; timeoutMs?: number; intervalMs?: number; onProgress?: (line: string) => void; fetch?: typeof globalThis.fetch } = {},
): Promise<Json> {
  const f = opts.fetch ?? globalThis.fetch;
  const done = opts.done ?? ((s) => s === 200);
  const end = Date.now() + (opts.timeoutMs ?? 120_000);
  const url = new URL(location, baseUrl).toString();
  for (let i = 0; ; i++) {
    const res = await f(url);
    const body = (await res.json()) as Json;
    if (done(res.status, body)) return body;
    if (Date.now() > end) throw new Error(`still pending after ${opts.timeoutMs ?? 120_000} ms: ${location}`);
    if (i % 8 === 0) opts.onProgress?.(`waiting for ${location} ...`);
    await new Promise((r) => setTimeout(r, opts.intervalMs ?? 500));
  }
}

/** Builds and signs (every chunk) the a2a topic message send-signed expects; base64 of all chunks. */
export async function buildSignedA2aMessage(p: {
  topicId: string;
  nodeAccountId: string;
  payerAccountId: string;
  privateKey: string;
  keyType?: KeyType;
  message: { from: string; to: string; body: string; contentType?: string };
}): Promise<string> {
  const envelope = encodeEnvelope(envelopeOf(p.message));
  const tx = new TopicMessageSubmitTransaction()
    .setTopicId(p.topicId)
    .setMessage(envelope)
    .setChunkSize(A2A_CHUNK_BYTES)
    .setMaxChunks(Math.max(1, Math.ceil(envelope.length / A2A_CHUNK_BYTES)))
    .setNodeAccountIds([AccountId.fromString(p.nodeAccountId)])
    .setTransactionId(TransactionId.generate(AccountId.fromString(p.payerAccountId)))
    .freeze();
  await signTransaction(tx, parsePrivateKey(p.privateKey, p.keyType));
  return Buffer.from(tx.toBytes()).toString('base64');
}

/** Signs prepare-payment's frozen transfer (base64) with the poster's key; base64 of the signed transaction. */
export async function signPreparedPayment(txBytes: string, privateKey: string, keyType?: KeyType): Promise<string> {
  const tx = Transaction.fromBytes(Buffer.from(txBytes, 'base64'));
  await signTransaction(tx, parsePrivateKey(privateKey, keyType));
  return Buffer.from(tx.toBytes()).toString('base64');
}

export type Tier = 'bronze' | 'silver' | 'gold' | 'platinum';

/** The agent-side client: read operations need no key; signed and paid ones use `agent`. */
export class AgentPassportClient {
  readonly api: ApiClient;
  readonly baseUrl: string;
  private readonly fetchImpl: typeof globalThis.fetch;

  constructor(private readonly options: AgentClientOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    // every request of this client (typed reads, signed and paid requests, sign-in, polling) waits out a busy service
    this.fetchImpl = patientFetch(options.fetch ?? globalThis.fetch, { maxWaitMs: options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS, onWait: (line) => this.progress(line) });
    this.api = createApiClient(this.baseUrl, this.fetchImpl);
  }

  get did(): string {
    const a = this.requireAgent();
    return a.did ?? `did:hedera:${this.options.network ?? 'local'}:${a.accountId}`;
  }

  private requireAgent(): AgentIdentity {
    if (!this.options.agent) throw new Error('this operation signs: give the client an agent key (AgentClientOptions.agent)');
    return this.options.agent;
  }

  private progress(line: string): void {
    this.options.onProgress?.(line);
  }

  /** Fresh X-Service-* headers (each challenge is single-use). */
  async signIn(): Promise<Record<string, string>> {
    const a = this.requireAgent();
    return signInHeaders(this.baseUrl, { did: this.did, privateKey: a.privateKey, keyType: a.keyType }, this.fetchImpl);
  }

  /** A signed (and, when `pay`, x402-paying) JSON request; 202 answers are polled at their Location. */
  async request(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
    opts: { sign?: boolean; pay?: boolean; poll?: boolean; headers?: Record<string, string> } = {},
  ): Promise<Json> {
    const headers: Record<string, string> = { ...opts.headers };
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (opts.sign) Object.assign(headers, await this.signIn());
    let f = this.fetchImpl;
    if (opts.pay) {
      const a = this.requireAgent();
      const max = BigInt(Math.round((this.options.maxPaymentHbar ?? 600) * 1e8));
      const inner = this.fetchImpl;
      const progress = this.progress.bind(this);
      f = createPayingFetch({
        accountId: a.accountId,
        privateKey: a.privateKey,
        keyType: a.keyType,
        nodeAccountId: this.options.nodeAccountId ?? '0.0.3',
        maxAmountTinybars: max,
        fetch: async (input, init) => {
          const req = new Request(input as string | URL | Request, init);
          if (req.headers.get('payment-signature')) progress(`paying in HBAR and waiting for ${method} ${path} ...`);
          return inner(req);
        },
      });
    }
    const res = await f(`${this.baseUrl}${path}`, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
    const json = (await res.json().catch(() => ({}))) as Json;
    if (res.status === 202 && opts.poll !== false) {
      const location = res.headers.get('location') ?? json.location;
      if (!location) return json;
      this.progress(`${method} ${path}: pending, polling ${location}`);
      return pollPending(this.baseUrl, location, { onProgress: this.options.onProgress, fetch: this.fetchImpl });
    }
    if (!res.ok) throw new ApiRequestError(res.status, json);
    return json;
  }

  /** A typed openapi-fetch answer: its data, or ApiRequestError with the SPEC error body. */
  private async read<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
    const { data, error, response } = await call;
    if (!response.ok || data === undefined) throw new ApiRequestError(response.status, (error ?? {}) as Json);
    return data;
  }

  // ---- passports and DIDs ----
  catalog() {
    return this.read(this.api.GET('/catalog'));
  }
  /** Buys a passport over x402 (pays the tier price in HBAR); on 202, waits for the active passport. */
  async buyPassport(tier: Tier = 'bronze', endpoint?: string): Promise<Json> {
    const a = this.requireAgent();
    const body = await this.request('POST', '/passport/request', { tier, ...(endpoint ? { endpoint } : {}) }, { sign: true, pay: true, poll: false });
    if (body.tokenId) return body;
    this.progress('passport pending; polling /passport/address ...');
    const owned = await pollPending(this.baseUrl, `/passport/address/${a.accountId}`, {
      done: (s, b) => s === 200 && Array.isArray(b.passports) && b.passports.some((p: Json) => p.active),
      onProgress: this.options.onProgress,
      fetch: this.fetchImpl,
    });
    return (owned.passports as Json[]).find((p) => p.active)!;
  }
  async upgradePassport(tokenId: string, serial: number, tier: Tier) {
    return this.request('POST', `/passport/${tokenId}/${serial}/upgrade`, { tier }, { sign: true, pay: true });
  }
  passport(tokenId: string, serial: number) {
    return this.read(this.api.GET('/passport/{tokenId}/{serial}', { params: { path: { tokenId, serial: String(serial) } } }));
  }
  passportsOf(accountId: string) {
    return this.read(this.api.GET('/passport/address/{address}', { params: { path: { address: accountId } } }));
  }
  resolveDid(did: string) {
    return this.read(this.api.GET('/did/{did}', { params: { path: { did } } }));
  }

  // ---- directory and search ----
  async register(entry: { name: string; capabilities: string[]; endpoint: string; skills?: string[]; description?: string; agentCard?: string }) {
    return this.request('POST', '/agents/register', { did: this.did, ...entry }, { sign: true });
  }
  agents(query: Query<'/agents'> = {}) {
    return this.read(this.api.GET('/agents', { params: { query } }));
  }
  agent(did: string) {
    return this.read(this.api.GET('/agents/{did}', { params: { path: { did } } }));
  }
  search(q: string, query: Omit<Query<'/api/search'>, 'q'> = {}) {
    return this.read(this.api.GET('/api/search', { params: { query: { q, ...query } } }));
  }

  // ---- A2A ----
  /** Sends a message with send-signed: built and signed here, the service never sees the key. */
  async sendMessage(to: string, body: string, contentType?: string): Promise<Json> {
    const a = this.requireAgent();
    if (!this.options.a2aTopicId) throw new Error('sending builds the topic message here: give the client a2aTopicId (topics.a2a of the deployment)');
    const message = { from: this.did, to, body, ...(contentType ? { contentType } : {}) };
    const txBytes = await buildSignedA2aMessage({
      topicId: this.options.a2aTopicId,
      nodeAccountId: this.options.nodeAccountId ?? '0.0.3',
      payerAccountId: a.accountId,
      privateKey: a.privateKey,
      keyType: a.keyType,
      message,
    });
    return this.request('POST', '/a2a/send-signed', { ...message, txBytes }, { sign: true, poll: false });
  }
  inbox(did?: string, query: Omit<Query<'/a2a/inbox'>, 'did'> = {}) {
    return this.read(this.api.GET('/a2a/inbox', { params: { query: { did: did ?? this.did, ...query } } }));
  }
  conversation(a: string, b: string, query: Omit<Query<'/a2a/conversation'>, 'a' | 'b'> = {}) {
    return this.read(this.api.GET('/a2a/conversation', { params: { query: { a, b, ...query } } }));
  }

  // ---- marketplace ----
  /**
   * Posts a task. Default escrow false: the poster pays at completion with a transfer signed here.
   * One logical post sends one Idempotency-Key (fresh unless given) and reuses it when it retries
   * (a network failure, 502 or 503, up to `attempts` tries with a fresh sign-in each), so a lost
   * answer never makes a second task: the service answers the task the key already stands for.
   */
  async postTask(
    task: { title: string; priceHbar: number; description?: string; capabilities?: string[]; deadline?: string; escrow?: boolean },
    opts: { idempotencyKey?: string; attempts?: number } = {},
  ) {
    const headers = { 'idempotency-key': opts.idempotencyKey ?? randomUUID() };
    const attempts = Math.max(1, opts.attempts ?? 3);
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.request('POST', '/market/tasks', { posterDid: this.did, escrow: false, ...task }, { sign: true, headers });
      } catch (err) {
        const retryable = !(err instanceof ApiRequestError) || err.status === 502 || err.status === 503;
        if (!retryable || attempt >= attempts) throw err;
        this.progress(`POST /market/tasks failed (${err instanceof ApiRequestError ? err.status : 'network'}); retrying with the same Idempotency-Key`);
        await new Promise((r) => setTimeout(r, 500 * attempt));
      }
    }
  }
  tasks(query: Query<'/market/tasks'> = {}) {
    return this.read(this.api.GET('/market/tasks', { params: { query } }));
  }
  /**
   * One task. A client with an agent key reads it DID-signed (one fresh challenge), so the task's
   * poster and claimer see the delivered result (resultBody, resultIpfs) before it is completed;
   * anyone else, and `{ signed: false }`, gets the task without them (resultSha256 and the status).
   */
  async task(taskId: string, opts: { signed?: boolean } = {}) {
    const signed = opts.signed ?? this.options.agent !== undefined;
    const header = signed ? await this.signIn() : undefined;
    return this.read(this.api.GET('/market/tasks/{taskId}', { params: { path: { taskId }, ...(header ? { header } : {}) } }));
  }
  async claimTask(taskId: string) {
    return this.request('POST', `/market/tasks/${encodeURIComponent(taskId)}/claim`, { claimerDid: this.did }, { sign: true });
  }
  async deliverTask(taskId: string, result: { resultBody?: string; resultIpfs?: string }) {
    return this.request('POST', `/market/tasks/${encodeURIComponent(taskId)}/deliver`, { claimerDid: this.did, ...result }, { sign: true });
  }
  /**
   * Completes a task without escrow: prepare-payment's frozen transfer is signed here with the poster
   * key and sent back (the key never leaves this process). A task with escrow needs posterPrivateKey
   * at the service (SPEC): that path is refused here on purpose.
   */
  async completeTask(taskId: string): Promise<Json> {
    const a = this.requireAgent();
    const id = encodeURIComponent(taskId);
    await this.waitForTask(taskId, (t) => t.status !== 'claimed');
    const prep = await this.request('POST', `/market/tasks/${id}/prepare-payment`, { posterDid: this.did }, { sign: true });
    const txBytes = await signPreparedPayment(String(prep.txBytes), a.privateKey, a.keyType);
    this.progress(`submitting the payment of task ${taskId} ...`);
    return this.request('POST', `/market/tasks/${id}/complete`, { posterDid: this.did, txBytes }, { sign: true });
  }
  /** Polls GET /market/tasks/{taskId} until `done` holds (reads are served from a NOTIFY-fed cache). */
  async waitForTask(taskId: string, done: (task: Json) => boolean, timeoutMs = 30_000): Promise<Json> {
    return pollPending(this.baseUrl, `/market/tasks/${encodeURIComponent(taskId)}`, { done: (s, b) => s === 200 && done(b), timeoutMs, intervalMs: 100, fetch: this.fetchImpl });
  }
  async cancelTask(taskId: string, reason?: string) {
    return this.request('POST', `/market/tasks/${encodeURIComponent(taskId)}/cancel`, { posterDid: this.did, ...(reason ? { reason } : {}) }, { sign: true });
  }

  // ---- events out (issue 28) ----
  /** The agent's own events after `after` (oldest first); with `wait` seconds (<= 30) and none yet, a long-poll. Signed. */
  async events(opts: { after?: string; wait?: number; limit?: number } = {}): Promise<EventPage> {
    const q = new URLSearchParams();
    if (opts.after) q.set('after', opts.after);
    if (opts.wait) q.set('wait', String(opts.wait));
    if (opts.limit) q.set('limit', String(opts.limit));
    const qs = q.toString();
    return (await this.request('GET', `/agents/${encodeURIComponent(this.did)}/events${qs ? `?${qs}` : ''}`, undefined, { sign: true })) as EventPage;
  }
  /**
   * Follows the agent's events from `after` (default: the oldest kept), yielding each as it is
   * recorded: long-polls of `wait` seconds (default 30), the cursor carried from page to page. Ends
   * when `signal` aborts. Keep the last id you handled to resume from it.
   */
  async *watchEvents(opts: { after?: string; wait?: number; signal?: AbortSignal } = {}): AsyncGenerator<AgentEvent> {
    let after = opts.after;
    while (!opts.signal?.aborted) {
      const page = await this.events({ ...(after ? { after } : {}), wait: opts.wait ?? 30 });
      for (const ev of page.events) {
        if (opts.signal?.aborted) return;
        yield ev;
      }
      after = page.next ?? after;
    }
  }
  /** Subscribes a URL to the agent's events; the answer carries the signing secret (whsec_...) this once. */
  async addWebhook(url: string, events: string[], capabilities?: string[]): Promise<WebhookCreated> {
    return (await this.request('POST', '/webhooks', { url, events, ...(capabilities?.length ? { capabilities } : {}) }, { sign: true })) as WebhookCreated;
  }
  async webhooks(): Promise<Webhook[]> {
    return ((await this.request('GET', '/webhooks', undefined, { sign: true })) as { webhooks: Webhook[] }).webhooks;
  }
  async removeWebhook(id: string): Promise<void> {
    await this.request('DELETE', `/webhooks/${encodeURIComponent(id)}`, undefined, { sign: true });
  }
  async webhookDeliveries(id: string, limit?: number) {
    return this.request('GET', `/webhooks/${encodeURIComponent(id)}/deliveries${limit ? `?limit=${limit}` : ''}`, undefined, { sign: true });
  }

  // ---- trust ----
  trustSnapshot(domain: string) {
    return this.read(this.api.GET('/api/trust/{domain}', { params: { path: { domain } } }));
  }
}
