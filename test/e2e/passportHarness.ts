/**
 * The whole passport stack for an e2e test file: its own localnet (+ facilitator), a Temporal
 * worker on its own task queue running the real workflows and activities, and the API listening on
 * a real port so @x402/fetch clients pay in localnet HBAR over HTTP.
 */
import path from 'node:path';
import fs from 'node:fs';
import { createHash, randomBytes } from 'node:crypto';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import type { FastifyInstance } from 'fastify';
import type { Worker, WorkerOptions } from '@temporalio/worker';
import { Client } from '@temporalio/client';
import { dataConverter } from '../../temporal/connection.js';
import { createSql, type Sql } from '../../db/client.js';
import { createActivities } from '../../activities/index.js';
import type { PassportLedgerActivities } from '../../activities/ledger/passports.js';
import type { PassportDbActivities } from '../../activities/db/passports.js';
import type { PaymentSettlementActivities } from '../../activities/ledger/paymentSettlement.js';
import { deletePaymentReconciler, ensurePaymentReconciler } from '../../worker/paymentReconciler.js';
import { deleteEscrowReconciler } from '../../worker/escrowReconciler.js';
import { createLedgerServices, type LedgerServices } from '../../ledger/services.js';
import { createPayingFetch } from '@agent-passport/core/x402/clientScheme';
import type { WorkflowSettings } from '../../api/workflowSettings.js';
import { buildTestApp, testConfig } from '../support/app.js';
import { dumpDatabase, recordSecret } from '../support/secrets.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { connectTestTemporal, recordHistory, type TestTemporal } from '../support/temporal.js';
import { signedHeaders, type TestAgent } from '../support/signing.js';
import { tinybarBalance as clientTinybarBalance } from '../localnet/harness.js';

const here = path.dirname(fileURLToPath(import.meta.url));
export const workflowsPath = path.join(here, '..', '..', 'workflows', 'index.ts');
export const historiesDir = path.join(here, '..', 'fixtures', 'histories');
export const ADMIN_TOKEN = 'e2e-admin-token-not-a-secret';

/** The passport activities (always present here: the harness has a ledger). */
export type Activities = PassportLedgerActivities & PassportDbActivities & PaymentSettlementActivities;

export interface PassportStack {
  stack: LedgerStack;
  sql: Sql;
  /** the stack's own database (tests that open more connections to it) */
  databaseUrl: string;
  t: TestTemporal;
  app: FastifyInstance;
  baseUrl: string;
  state: WorkflowSettings;
  activities: Activities;
  /** what the worker's activities are built from (tests build variants, e.g. with another facilitator) */
  ledgerDeps: LedgerServices;
  agents: TestAgent[];
  /** Starts a worker on the stack's task queue; `override` replaces activities by name. */
  startWorker(override?: Partial<Activities>, options?: Partial<WorkerOptions>): Promise<{ worker: Worker; running: Promise<void> }>;
  /** The workflow id this stack's API starts for a business id (behind the stack's scope). */
  workflowId(id: string): string;
  /** Schedules the payment reconciler on this stack's task queue (stop() deletes it, as it deletes one a child worker made). */
  startReconciler(o: { afterMs: number; everyMs: number }): Promise<string>;
  stop(): Promise<void>;
}

/**
 * Every localnet bootstraps the same entity ids, so two stacks share account, token and topic ids.
 * Each stack therefore gets its own database (migrated copy beside the run's database) and its own
 * workflow id scope in the shared Temporal namespace.
 */
async function ownDatabase(prefix: string): Promise<{ url: string; drop(): Promise<void> }> {
  const base = new URL(inject('databaseUrl'));
  const name = `${base.pathname.slice(1)}_${prefix}_${randomBytes(3).toString('hex')}`.slice(0, 63);
  const url = new URL(base.toString());
  url.pathname = `/${name}`;
  await ensureDatabase(url.toString());
  await migrate(url.toString());
  return {
    url: url.toString(),
    // its rows are kept for the secrets scan first (test/support/secrets.ts)
    drop: () => dumpDatabase(url.toString()).then(() => dropDatabase(url.toString())).catch(() => {}),
  };
}

/**
 * `codecKey` (64 hex): the API's Temporal client (ps.t.client) and every worker of the stack use the
 * payload codec of that PAYLOAD_CODEC_KEY with this NODE_ENV (test: unencrypted payloads refused),
 * as server.ts and the worker build them (temporal/connection.ts dataConverter).
 */
export async function startPassportStack(prefix: string, opts: { env?: Record<string, string>; codecKey?: string } = {}): Promise<PassportStack> {
  const stack = await startLedgerStack(prefix);
  const db = await ownDatabase(prefix);
  const sql = createSql(db.url, { max: 6 });
  const plain = await connectTestTemporal(prefix);
  const converter = opts.codecKey ? dataConverter(testConfig({ PAYLOAD_CODEC_KEY: opts.codecKey })) : undefined;
  const t: TestTemporal = converter
    ? {
        ...plain,
        client: new Client({ connection: plain.client.connection, namespace: plain.client.options.namespace, dataConverter: converter }),
        createWorker: (o) => plain.createWorker({ dataConverter: converter, ...o }),
      }
    : plain;
  const config = testConfig(stack.env);
  const ledgerDeps = createLedgerServices(stack.ledger, { sql });
  const activities = createActivities({ config, sql, ledger: ledgerDeps }) as Activities;
  const workers: { worker: Worker; running: Promise<void> }[] = [];
  const startWorker = async (override: Partial<Activities> = {}, options: Partial<WorkerOptions> = {}) => {
    const worker = await t.createWorker({ ...options, workflowsPath, activities: { ...activities, ...override } });
    const running = worker.run();
    const w = { worker, running };
    workers.push(w);
    return w;
  };
  recordSecret('e2e admin token', ADMIN_TOKEN); // a fixed one, but no more to be logged or stored than a real one
  const app = await buildTestApp(
    {
      ...stack.env,
      TEMPORAL_TASK_QUEUE: t.taskQueue,
      RATE_LIMIT_MAX: '100000',
      ADMIN_TOKEN_SHA256: createHash('sha256').update(ADMIN_TOKEN).digest('hex'),
      ...(opts.codecKey ? { PAYLOAD_CODEC_KEY: opts.codecKey } : {}),
      ...opts.env,
    },
    { sql, ledger: stack.ledger, temporal: async () => t.client },
  );
  await app.listen({ port: 0, host: '127.0.0.1' });
  const { port } = app.server.address() as { port: number };
  const state = app.workflowSettings;
  // fast retries so a blocked or failing attempt is retried within a second
  state.timings = { retryInitialMs: 200, retryMaximumMs: 2_000, ledgerMaxAttempts: 10, activityTimeoutMs: 60_000 };
  state.workflowIdScope = `${t.taskQueue}/`;
  return {
    stack,
    sql,
    databaseUrl: db.url,
    t,
    app,
    baseUrl: `http://127.0.0.1:${port}`,
    state,
    activities,
    ledgerDeps,
    agents: stack.localnet.config.accounts,
    startWorker,
    workflowId: (id) => `${state.workflowIdScope ?? ''}${id}`,
    async startReconciler(o) {
      return ensurePaymentReconciler(t.client, { taskQueue: t.taskQueue, afterMs: o.afterMs, everyMs: o.everyMs, workflowIdScope: state.workflowIdScope, timings: state.timings });
    },
    async stop() {
      // the reconcilers' schedules, whoever made them (this file, or a child worker process on this queue)
      await deletePaymentReconciler(t.client, t.taskQueue).catch(() => undefined);
      await deleteEscrowReconciler(t.client, t.taskQueue).catch(() => undefined);
      await app.close();
      for (const w of workers) {
        if (w.worker.getState() === 'RUNNING') w.worker.shutdown();
        await w.running.catch(() => undefined);
      }
      await t.close();
      await sql.end();
      await db.drop();
      await stack.stop();
    },
  };
}

export interface PaidResponse {
  status: number;
  body: Record<string, any>;
  headers: Headers;
  /** the PAYMENT-SIGNATURE the client sent, if it paid */
  paymentSignature: string | null;
}

/** An x402 client of one agent paying localnet HBAR (@x402/fetch), remembering the PAYMENT-SIGNATURE it sent. */
export function payingClient(ps: PassportStack, agent: TestAgent, o: { maxHbar?: bigint; validDurationSeconds?: number } = {}) {
  let paymentSignature: string | null = null;
  const spy: typeof fetch = async (input, init) => {
    const req = new Request(input as string | URL | Request, init);
    const h = req.headers.get('payment-signature');
    if (h) paymentSignature = h;
    return fetch(req);
  };
  const payingFetch = createPayingFetch({
    accountId: agent.accountId,
    privateKey: agent.privateKey,
    keyType: agent.keyType,
    node: ps.stack.localnet.config.node,
    maxAmountTinybars: (o.maxHbar ?? 600n) * 100_000_000n,
    networks: ['local'],
    ...(o.validDurationSeconds ? { validDurationSeconds: o.validDurationSeconds } : {}),
    fetch: spy,
  });
  return { fetch: payingFetch, paymentSignature: () => paymentSignature };
}

/** A signed, paid POST as an agent does it: 402 -> pay with @x402/fetch -> the answer. */
export async function paidPost(ps: PassportStack, agent: TestAgent, urlPath: string, body: unknown, maxHbar = 600n): Promise<PaidResponse> {
  const headers = await signedHeaders(ps.app, agent);
  const client = payingClient(ps, agent, { maxHbar });
  const res = await client.fetch(`${ps.baseUrl}${urlPath}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers, paymentSignature: client.paymentSignature() };
}

/**
 * Buys a passport as set-up for another test: a 202 (an issuance outlasting the bounded wait on a
 * busy machine, which SPEC allows) is followed to the issued passport, whose fields match the 200.
 */
export async function buyPassport(ps: PassportStack, agent: TestAgent, body: Record<string, unknown>, maxHbar = 600n): Promise<PaidResponse> {
  const r = await paidPost(ps, agent, '/passport/request', body, maxHbar);
  if (r.status !== 202) return r;
  const passport = await waitForPassport(ps, agent.accountId);
  return { ...r, status: 200, body: passport };
}

/** A signed POST with a given PAYMENT-SIGNATURE (replays and retries). */
export async function signedPost(ps: PassportStack, agent: TestAgent, urlPath: string, body: unknown, extra: Record<string, string> = {}) {
  const headers = await signedHeaders(ps.app, agent);
  const res = await fetch(`${ps.baseUrl}${urlPath}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers, ...extra }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
}

/** A JSON POST with the given headers (none signed here). */
export async function postJson(ps: PassportStack, urlPath: string, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${ps.baseUrl}${urlPath}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** An account's HBAR balance in tinybars, read from the ledger. */
export function tinybarBalance(ps: PassportStack, accountId: string): Promise<bigint> {
  return clientTinybarBalance(ps.stack.ledger.client, accountId);
}

export async function getJson(ps: PassportStack, urlPath: string, headers: Record<string, string> = {}) {
  const res = await fetch(`${ps.baseUrl}${urlPath}`, { headers });
  return { status: res.status, body: (await res.json()) as Record<string, any> };
}

/** Polls until the account's active passport shows up (after a 202). */
export async function waitForPassport(ps: PassportStack, accountId: string, timeoutMs = 90_000): Promise<Record<string, any>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const r = await getJson(ps, `/passport/address/${accountId}`);
    const active = (r.body.passports as Record<string, any>[] | undefined)?.find((p) => p.active);
    if (active) return active;
    if (Date.now() > end) throw new Error(`no passport for ${accountId} after ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

/**
 * Saves a finished workflow's history as a replay fixture when the fixture is missing (or when
 * RECORD_HISTORIES=1), so the committed files only change on purpose.
 */
export async function recordFixture(ps: PassportStack, workflowId: string, name: string): Promise<void> {
  const file = path.join(historiesDir, `${name}.history.bin`);
  if (fs.existsSync(file) && process.env.RECORD_HISTORIES !== '1') return;
  fs.mkdirSync(historiesDir, { recursive: true });
  await recordHistory(ps.t.client, workflowId, file);
}

/**
 * Upgrades the agent's active passport to `tier` over x402, as set-up for tests whose agents start
 * below the marketplace's tier (the marketplace is for gold and platinum passports, SPEC 2).
 */
export async function upgradePassportTo(ps: PassportStack, agent: TestAgent, tier: 'gold' | 'platinum'): Promise<void> {
  const p = await waitForPassport(ps, agent.accountId);
  if (p.tier === tier) return;
  const r = await paidPost(ps, agent, `/passport/${p.tokenId}/${p.serialNumber}/upgrade`, { tier });
  if (r.status !== 200 && r.status !== 202) throw new Error(`upgrade of ${agent.did} to ${tier}: ${r.status} ${JSON.stringify(r.body)}`);
  const end = Date.now() + 90_000;
  for (;;) {
    const now = await getJson(ps, `/passport/${p.tokenId}/${p.serialNumber}`);
    if (now.body.tier === tier) return;
    if (Date.now() > end) throw new Error(`${agent.did} never showed tier ${tier}`);
    await new Promise((res) => setTimeout(res, 250));
  }
}
