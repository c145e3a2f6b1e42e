/**
 * The chaos run (issue 13): many agents buy passports and run whole task lifecycles through the HTTP
 * API while the worker, the API and localnet are SIGKILLed at random moments and restarted (localnet
 * replays its journal), with localnet faults (BUSY, UNAVAILABLE, slow consensus) switched on between
 * kills. Clients behave as x402 clients: they retry the same request (the same PAYMENT-SIGNATURE,
 * the same body) until they get a final answer, except a share of the passport buyers (abandonRate)
 * that give up for good the first time their paid request gets no answer (NOTES.md: such a client
 * never comes back). At the end the ledger is audited through the mirror: at most one passport per
 * agent, every payment delivered or refunded exactly once, every completed task paid exactly once and
 * every cancelled funded task refunded exactly once, no task lost (each has a workflow and a
 * projection that agree), and (issue 23) every payment that reached the ledger ends as a passport or
 * a refund within the payment reconciler's bound, whether or not its client came back: the worker
 * runs the reconciler with PAYMENT_RECONCILE_AFTER_MS = reconcileAfterMs, and the service's own
 * payment records must agree (none still verified or settled without an outcome after the bound);
 * and the escrow audit (ledger/escrowAudit.ts, the `npm run audit:escrow` check): the escrow
 * account's balance equals the funded, unpaid escrows, to the tinybar.
 *
 * Used by `npm run test:chaos` (scripts/chaos.ts, the full run) and test/chaos/chaos.test.ts (short).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { AccountCreateTransaction, Hbar, PrivateKey } from '@hashgraph/sdk';
import { Client as TemporalClient, Connection } from '@temporalio/client';
import { dataConverter } from '../../temporal/connection.js';
import { createSql, type Sql } from '../../db/client.js';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import type { LocalnetConfig } from '../../localnet/index.js';
import { createPayingFetch } from '@agent-passport/core/x402/clientScheme';
import { auditEscrow, formatEscrowAudit, type EscrowAuditReport } from '../../ledger/escrowAudit.js';
import { MirrorClient } from '../../ledger/mirror.js';
import { freePort } from '../../scripts/lib/ports.js';
import { taskStateQuery, taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { deletePaymentReconciler } from '../../worker/paymentReconciler.js';
import { deleteEscrowReconciler } from '../../worker/escrowReconciler.js';
import { sdkClient } from '../localnet/harness.js';
import { databaseUrlOf, startChildProcess, startChildWorker, type ChildWorker } from '../reliability/childWorker.js';
import { dumpDatabase, keepLocalnetData, recordSecret } from '../support/secrets.js';
import { signChallenge, type TestAgent } from '../support/signing.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const TINYBARS = 100_000_000;

export interface ChaosOptions {
  /** agents, each buying one passport (issuances) */
  issuances: number;
  /** task lifecycles between passport holders */
  lifecycles: number;
  /** SIGKILLs, spread over the run (by operations done) */
  kills: number;
  /** localnet faults between kills */
  faults: boolean;
  /** operations in flight */
  concurrency: number;
  /** how long the end state may take to settle before the audit counts what is left */
  settleMs: number;
  /** a client gives up on a request without a final answer after this long (counted as a refusal) */
  opTimeoutMs: number;
  /** which processes may be killed */
  targets: Target[];
  /** the payment reconciler's bound (PAYMENT_RECONCILE_AFTER_MS of the worker; default 20 s) */
  reconcileAfterMs?: number;
  /** how often it runs (PAYMENT_RECONCILE_EVERY_MS; default 2 s) */
  reconcileEveryMs?: number;
  /** share of passport buyers that never retry a paid request that got no answer (default 0.25) */
  abandonRate?: number;
  seed: number;
  databaseUrl: string;
  temporalAddress: string;
  /** the Temporal namespace of the run (default: default) */
  namespace?: string;
  /** the stack's PAYLOAD_CODEC_KEY (its processes run as production): the run's own Temporal client decodes with it */
  payloadCodecKey?: string;
  log: (line: string) => void;
  /**
   * Another topology than one localnet, one API and one worker (test/cluster/stack.ts: two of each
   * behind an entry point, on a Temporal cluster): built from the parts of the default stack.
   */
  makeStack?: (parts: StackParts) => Stack;
}

export type Target = 'worker' | 'api' | 'localnet' | 'temporal';

export interface ChaosReport {
  agents: number;
  passportsIssued: number;
  tasks: number;
  completed: number;
  cancelled: number;
  open: number;
  kills: Record<Target, number>;
  faults: Record<string, number>;
  doubleMints: number;
  doublePayouts: number;
  lostTasks: number;
  lostPayments: number;
  /** passport buyers that gave up after a paid request without an answer (they never came back) */
  abandoned: number;
  refusals: number;
  recoveryMs: { samples: number; p50: number | null; p99: number | null; max: number | null };
  durationMs: number;
  /** the escrow audit's figures at the end (npm run audit:escrow) */
  escrow: EscrowAuditReport | null;
  violations: string[];
}

/** small deterministic PRNG (mulberry32) so a seed reproduces the choices */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

type Json = Record<string, any>;
interface Answer {
  status: number;
  body: Json;
}

/** what the run prepares for its stack: the environments of its processes and the API's URL */
export interface StackParts {
  localnetEnv: Record<string, string>;
  apiEnv: Record<string, string>;
  workerEnv: Record<string, string>;
  apiUrl: string;
}

/** the processes of one stack: SIGKILL and restart each on the same ports and data */
export class Stack {
  localnet!: ChildWorker;
  api!: ChildWorker;
  worker!: ChildWorker;
  readonly localnetEnv: Record<string, string>;
  readonly apiEnv: Record<string, string>;
  readonly workerEnv: Record<string, string>;
  apiUrl: string;
  constructor(parts: StackParts) {
    this.localnetEnv = parts.localnetEnv;
    this.apiEnv = parts.apiEnv;
    this.workerEnv = parts.workerEnv;
    this.apiUrl = parts.apiUrl;
  }

  startLocalnet() {
    // about 2 s from its state snapshot; the long bound covers a start without a usable snapshot, which
    // replays the whole journal (before snapshots: about 70 s after 1,000 operations here, over 120 s after 1,500)
    return startChildProcess({ name: 'localnet', entry: path.join(root, 'localnet', 'main.ts'), env: this.localnetEnv, readyText: 'localnet ready', readyTimeoutMs: 900_000 });
  }
  startApi() {
    const probe = async () => (await fetch(`${this.apiUrl}/health`).catch(() => null))?.status === 200;
    return startChildProcess({ name: 'api', entry: path.join(root, 'api', 'server.ts'), env: this.apiEnv, ready: probe });
  }
  /** the API and the worker, once localnet is up */
  async startServices(): Promise<void> {
    [this.api, this.worker] = await Promise.all([this.startApi(), startChildWorker(this.workerEnv)]);
  }
  /** SIGKILL, then start again; resolves when the new process is ready */
  async killAndRestart(target: Target): Promise<void> {
    if (target === 'temporal') throw new Error('this stack does not run the Temporal server');
    await this[target].kill('SIGKILL');
    // a process that does not come back is retried: the run must go on
    for (let attempt = 1; ; attempt++) {
      try {
        this[target] = target === 'localnet' ? await this.startLocalnet() : target === 'api' ? await this.startApi() : await startChildWorker(this.workerEnv);
        return;
      } catch (err) {
        if (attempt >= 5) throw err;
        await sleep(1_000);
      }
    }
  }
  async stop(): Promise<void> {
    for (const p of [this.worker, this.api, this.localnet]) await p?.kill('SIGTERM').catch(() => null);
  }
}

export async function runChaos(o: ChaosOptions): Promise<ChaosReport> {
  const started = Date.now();
  o.log(`[chaos] seed ${o.seed}: ${o.issuances} issuances, ${o.lifecycles} lifecycles, ${o.kills} kills of ${o.targets.join('/')}${o.faults ? ', localnet faults' : ''}`);
  const rand = prng(o.seed);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const dir = mkdtempSync(path.join(tmpdir(), 'chaos-'));
  const base = new URL(o.databaseUrl);
  const dbUrl = new URL(base.toString());
  dbUrl.pathname = `/${`${base.pathname.slice(1)}_chaos_${process.pid}_${Date.now() % 1e6}`.slice(0, 63)}`;
  await ensureDatabase(dbUrl.toString());
  await migrate(dbUrl.toString());
  const sql: Sql = createSql(dbUrl.toString(), { max: 4 });

  const [grpcPort, mirrorPort, facilitatorPort, apiPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  const localnetJson = path.join(dir, 'localnet.json');
  const taskQueue = `chaos-${process.pid}-${Date.now()}`;
  const common = { LOCALNET_CONFIG_PATH: localnetJson, HEDERA_NETWORK: 'local', DATABASE_URL: databaseUrlOf(sql), TEMPORAL_ADDRESS: o.temporalAddress, TEMPORAL_NAMESPACE: o.namespace ?? 'default', TEMPORAL_TASK_QUEUE: taskQueue };
  const reconcileAfterMs = o.reconcileAfterMs ?? 20_000;
  const reconcileEveryMs = o.reconcileEveryMs ?? 2_000;
  const abandonRate = o.abandonRate ?? 0.25;
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const parts: StackParts = {
    localnetEnv: { LOCALNET_DATA_DIR: path.join(dir, 'localnet'), LOCALNET_GRPC_PORT: String(grpcPort), LOCALNET_MIRROR_PORT: String(mirrorPort), FACILITATOR_PORT: String(facilitatorPort), LOCALNET_JSON: localnetJson },
    apiEnv: { ...common, HOST: '127.0.0.1', PORT: String(apiPort), RATE_LIMIT_MAX: '1000000', LOG_LEVEL: 'error' },
    workerEnv: { ...common, PAYMENT_RECONCILE_AFTER_MS: String(reconcileAfterMs), PAYMENT_RECONCILE_EVERY_MS: String(reconcileEveryMs) },
    apiUrl,
  };
  const stack = o.makeStack ? o.makeStack(parts) : new Stack(parts);
  const connection = await Connection.connect({ address: o.temporalAddress });
  const temporal = new TemporalClient({ connection, namespace: o.namespace ?? 'default', dataConverter: o.payloadCodecKey ? dataConverter({ NODE_ENV: 'production', PAYLOAD_CODEC_KEY: o.payloadCodecKey }) : undefined });
  const kills: Record<Target, number> = { worker: 0, api: 0, localnet: 0, temporal: 0 };
  const faults: Record<string, number> = { busy: 0, unavailable: 0, delay: 0 };
  try {
    stack.localnet = await stack.startLocalnet();
    const cfg = JSON.parse(readFileSync(localnetJson, 'utf8')) as LocalnetConfig;
    recordSecret('chaos localnet operator key', cfg.operator.privateKey);
    recordSecret('chaos localnet escrow key', cfg.escrowPrivateKey);
    const mirrorBase = cfg.mirrorUrl.replace(/\/api\/v1\/?$/, '');

    // agents: fresh funded accounts (localnet bootstraps only 6)
    o.log(`[chaos] creating ${o.issuances} agent accounts`);
    const agents = await createAgents(cfg, o.issuances);
    await stack.startServices();
    o.log('[chaos] stack up: localnet, API and worker processes');

    // ---- the clients -------------------------------------------------------------------------
    const ask = async (method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer | null> => {
      try {
        const res = await fetch(`${stack.apiUrl}${urlPath}`, {
          method,
          headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
          signal: AbortSignal.timeout(90_000),
        });
        const text = await res.text();
        return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
      } catch {
        return null; // connection refused or reset, timeout: the API died or is restarting
      }
    };
    const signed = async (agent: TestAgent): Promise<Record<string, string> | null> => {
      const r = await ask('GET', `/auth/challenge?did=${encodeURIComponent(agent.did)}`);
      if (r?.status !== 200) return null;
      return { 'x-service-did': agent.did, 'x-service-challenge': r.body.challenge, 'x-service-signature': signChallenge(agent, r.body.challenge) };
    };
    /** a non-final answer: retry the same request (as the error schema's `retryable` says) */
    const again = (a: Answer | null) => !a || a.status === 202 || a.status === 429 || a.status >= 500 || a.body.retryable === true;
    let refusals = 0;
    const refused = (what: string, a: Answer) => {
      refusals++;
      o.log(`[chaos] refused: ${what}: ${a.status} ${JSON.stringify(a.body).slice(0, 300)}`);
    };

    /** what a try got, for the message of an operation that gives up */
    const describe = (what: string, a: Answer | null) => `${what}: ${a ? `${a.status} ${String(a.body.code ?? a.body.status ?? '')}`.trim() : 'no answer'}`;
    /** a client's pause between two tries of the same request; it gives up after opTimeoutMs */
    const backoff = async (attempt: number, since: number, last = '') => {
      if (Date.now() - since > o.opTimeoutMs) throw new Error(`no final answer after ${o.opTimeoutMs} ms${last ? ` (last try: ${last})` : ''}`);
      await sleep(Math.min(3_000, 300 * attempt));
    };
    const holders: TestAgent[] = [];
    let issuancesEnded = 0;
    let issued = 0;
    let abandoned = 0;
    async function buyPassport(agent: TestAgent): Promise<void> {
      let payment: string | null = null;
      // the marketplace is for gold and platinum passports (SPEC 2 trust ladder)
      // decided up front, so the seed reproduces who gives up
      const comesBack = rand() >= abandonRate;
      const body = JSON.stringify({ tier: 'gold' });
      const t0 = Date.now();
      let last = '';
      for (let attempt = 0; ; attempt++) {
        if (attempt) await backoff(attempt, t0, last);
        const headers = await signed(agent);
        last = `passport for ${agent.accountId}: sign-in failed`;
        if (!headers) continue;
        let a: Answer | null = null;
        try {
          if (!payment) {
            const spy: typeof fetch = async (input, init) => {
              const req = new Request(input as string | URL | Request, init);
              const h = req.headers.get('payment-signature');
              if (h) payment = h;
              return fetch(req);
            };
            const paying = createPayingFetch({ accountId: agent.accountId, privateKey: agent.privateKey, keyType: agent.keyType, node: cfg.node, maxAmountTinybars: 150n * BigInt(TINYBARS), networks: ['local'], fetch: spy });
            const res = await paying(`${stack.apiUrl}/passport/request`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body, signal: AbortSignal.timeout(90_000) });
            a = { status: res.status, body: (await res.json().catch(() => ({}))) as Json };
          } else {
            // the same paid request again: same payment, same body
            a = await ask('POST', '/passport/request', JSON.parse(body), { ...headers, 'payment-signature': payment });
          }
        } catch {
          a = null;
        }
        last = describe(`passport for ${agent.accountId}`, a);
        if (!a && payment && !comesBack) {
          // it paid, got no answer, and never comes back: the service alone must settle its payment
          abandoned++;
          o.log(`[chaos] passport for ${agent.accountId}: no answer to the paid request; the client gives up for good`);
          return;
        }
        if (again(a)) continue;
        if (a!.status === 200) {
          issued++;
          holders.push(agent);
          return;
        }
        // a 409 for an agent that already holds its passport (an earlier attempt went through) is success too
        const mine = await ask('GET', `/passport/address/${agent.accountId}`);
        if ((mine?.body.passports as Json[] | undefined)?.some((p) => p.active)) {
          issued++;
          holders.push(agent);
          return;
        }
        return refused(`passport for ${agent.accountId}`, a!);
      }
    }

    const knownTasks = new Set<string>();
    const taskStatus = async (taskId: string) => (await ask('GET', `/market/tasks/${taskId}`))?.body.status as string | undefined;
    const ORDER = ['posted', 'claimed', 'delivered', 'completed'];
    /** one step, retried until the task shows it (or a final refusal) */
    async function step(agent: TestAgent, taskId: string, name: string, body: Json, reached: (status: string) => boolean): Promise<boolean> {
      const t0 = Date.now();
      let last = '';
      for (let attempt = 0; ; attempt++) {
        if (attempt) await backoff(attempt, t0, last);
        const status = await taskStatus(taskId);
        if (status && reached(status)) return true;
        const headers = await signed(agent);
        last = `${name} ${taskId} (task ${status ?? 'unreadable'}): sign-in failed`;
        if (!headers) continue;
        const a = await ask('POST', `/market/tasks/${taskId}/${name}`, body, headers);
        last = describe(`${name} ${taskId} (task ${status ?? 'unreadable'})`, a);
        if (again(a)) continue;
        if (a!.status === 200) return true;
        // the same step repeated after a lost answer answers 202 or 200 (docs/decisions.md, "A repeated
        // step answers its outcome"), so a refusal is not expected here; reads may be a moment behind
        // the workflow, so look again before counting it as refused
        for (let look = 0; look < 20; look++) {
          const now = await taskStatus(taskId);
          if (now && reached(now)) return true;
          await sleep(500);
        }
        refused(`${name} ${taskId}`, a!);
        return false;
      }
    }
    const atLeast = (s: string) => (status: string) => ORDER.indexOf(status) >= ORDER.indexOf(s);
    async function lifecycle(): Promise<void> {
      while (holders.length < 2) {
        if (issuancesEnded === agents.length) return; // fewer than two passports in the whole run
        await sleep(500);
      }
      const poster = pick(holders);
      let claimer = pick(holders);
      while (claimer === poster) claimer = pick(holders);
      const priceHbar = (100 + Math.floor(rand() * 200)) / 100; // 1.00-2.99 HBAR, whole cents
      const ending = rand();
      let taskId: string | null = null;
      const t0 = Date.now();
      // one Idempotency-Key per lifecycle, the same body on every try: a retry after a lost answer
      // gets the task the first try made (crypto's UUID, so the seeded choices stay as they were)
      const idempotencyKey = `chaos-${randomUUID()}`;
      const title = `chaos task ${idempotencyKey.slice(-12)}`;
      let last = '';
      for (let attempt = 0; !taskId; attempt++) {
        if (attempt) await backoff(attempt, t0, last);
        const headers = await signed(poster);
        last = `post by ${poster.accountId}: sign-in failed`;
        if (!headers) continue;
        const a = await ask('POST', '/market/tasks', { posterDid: poster.did, title, priceHbar, escrow: true }, { ...headers, 'idempotency-key': idempotencyKey });
        last = describe(`post by ${poster.accountId}`, a);
        // 202: the task exists and its workflow is still on it; the client follows the poll link
        const pending = a?.status === 202 ? /^task:(.+)$/.exec(String(a.body.workflowId ?? '')) : null;
        if (pending) {
          taskId = pending[1];
          break;
        }
        if (again(a)) continue;
        if (a!.status !== 200) return refused(`post by ${poster.accountId}`, a!);
        taskId = a!.body.taskId as string;
      }
      knownTasks.add(taskId);
      // after a 202 the task is readable once its posting step wrote it: follow the poll link first
      for (let attempt = 1; !(await taskStatus(taskId)); attempt++) await backoff(attempt, t0, `GET /market/tasks/${taskId}: not readable after its post answered 202`);
      const cancel = () => step(poster, taskId!, 'cancel', { posterDid: poster.did }, (s) => s === 'cancelled');
      if (ending < 0.2) return void (await cancel());
      if (!(await step(claimer, taskId, 'claim', { claimerDid: claimer.did }, atLeast('claimed')))) return;
      if (ending < 0.4) return void (await cancel());
      if (!(await step(claimer, taskId, 'deliver', { claimerDid: claimer.did, resultBody: `result of ${taskId}` }, atLeast('delivered')))) return;
      await step(poster, taskId, 'complete-with-key', { posterDid: poster.did, posterPrivateKey: poster.privateKey }, (s) => s === 'completed');
    }

    // ---- the run: operations in a pool, kills spread by progress ---------------------------------
    const ops: (() => Promise<void>)[] = [...agents.map((a) => () => buyPassport(a).finally(() => issuancesEnded++)), ...Array.from({ length: o.lifecycles }, () => lifecycle)];
    const total = ops.length;
    let done = 0;
    let next = 0;
    const inFlight = new Map<number, number>(); // op index -> start time
    const ended = new Map<number, number>(); // op index -> end time
    const pool = Array.from({ length: Math.min(o.concurrency, total) }, async () => {
      while (next < total) {
        const i = next++;
        inFlight.set(i, Date.now());
        await ops[i]().catch((err) => {
          refusals++;
          o.log(`[chaos] operation ${i} gave up: ${String(err)}`);
        });
        inFlight.delete(i);
        ended.set(i, Date.now());
        done++;
      }
    });
    let lastKill: { at: number; pending: number[] } | null = null;
    let order: Target[] = [...o.targets];
    const killer = (async () => {
      for (let k = 1; k <= o.kills; k++) {
        const threshold = Math.floor((k * total) / (o.kills + 1));
        while (done < threshold && done < total) await sleep(100);
        if (done >= total) break;
        await sleep(rand() * 1_500);
        if (done >= total) break;
        if (o.faults && rand() < 0.6) {
          const kind = pick(['busy', 'unavailable', 'delay'] as const);
          const q = kind === 'busy' ? `n=${1 + Math.floor(rand() * 5)}` : `seconds=${1 + Math.floor(rand() * 4)}`;
          const r = await fetch(`${mirrorBase}/__control/${kind}?${q}`, { method: 'POST' }).catch(() => null);
          if (r?.ok) faults[kind]++;
        }
        // every target in turn, in a shuffled order per round, so a short run kills each process
        if (k % o.targets.length === 1 || o.targets.length === 1) order = [...o.targets].sort(() => rand() - 0.5);
        const target = order[(k - 1) % o.targets.length];
        const at = Date.now();
        lastKill = { at, pending: [...inFlight.keys()] };
        kills[target]++;
        o.log(`[chaos] kill ${k}/${o.kills}: SIGKILL ${target} (${done}/${total} operations done, ${inFlight.size} in flight)`);
        await stack.killAndRestart(target);
        o.log(`[chaos] ${target} back after ${Date.now() - at} ms`);
      }
    })();
    await Promise.all([...pool, killer]);
    o.log(`[chaos] ${total} operations done in ${Math.round((Date.now() - started) / 1000)} s; auditing`);

    // recovery after the last kill: kill to the final answer of every operation in flight then
    const samples = lastKill ? (lastKill as { at: number; pending: number[] }).pending.map((i) => ended.get(i)! - (lastKill as { at: number }).at).sort((a, b) => a - b) : [];
    const pct = (p: number) => (samples.length ? samples[Math.min(samples.length - 1, Math.ceil((p / 100) * samples.length) - 1)] : null);

    // ---- the audit, repeated until clean or settleMs (at least the reconciler's bound) ---------------
    const boundMs = reconcileAfterMs + 4 * reconcileEveryMs + 30_000; // a pass, its refund or issuance, the mirror
    const deadline = Date.now() + Math.max(o.settleMs, boundMs);
    let audit: Audit;
    let escrow: EscrowAuditReport;
    for (;;) {
      audit = await auditLedger({ sql, temporal, mirrorBase, cfg, agents, knownTasks, boundMs });
      escrow = await auditEscrow(new MirrorClient(cfg.mirrorUrl), { escrowAccountId: cfg.escrow, marketplaceTopicId: cfg.topics.marketplace });
      if ((!audit.violations.length && escrow.ok) || Date.now() > deadline) break;
      await sleep(3_000);
    }
    o.log(`[chaos] escrow audit:\n${formatEscrowAudit(escrow)}`);
    return {
      agents: agents.length,
      passportsIssued: issued,
      tasks: audit.tasks,
      completed: audit.completed,
      cancelled: audit.cancelled,
      open: audit.open,
      kills,
      faults,
      doubleMints: audit.doubleMints,
      doublePayouts: audit.doublePayouts,
      lostTasks: audit.lostTasks,
      lostPayments: audit.lostPayments,
      abandoned,
      refusals,
      recoveryMs: { samples: samples.length, p50: pct(50), p99: pct(99), max: samples.length ? samples[samples.length - 1] : null },
      durationMs: Date.now() - started,
      escrow,
      violations: [...audit.violations, ...escrow.violations.map((v) => `escrow audit: ${v}`)],
    };
  } finally {
    await stack.stop();
    await deletePaymentReconciler(temporal, taskQueue).catch(() => undefined); // the worker made it; nothing runs it any more
    await deleteEscrowReconciler(temporal, taskQueue).catch(() => undefined); // the same for the escrow reconciler's
    await connection.close().catch(() => undefined);
    await sql.end({ timeout: 5 });
    // its rows are kept for the secrets scan first (inside a test run; a no-op for the script)
    await dumpDatabase(dbUrl.toString()).catch(() => undefined);
    await dropDatabase(dbUrl.toString()).catch(() => undefined);
    keepLocalnetData(path.join(dir, 'localnet'), path.basename(dir)); // and its localnet's journal
    rmSync(dir, { recursive: true, force: true });
  }
}

/** funded ED25519 accounts with token auto-association, created by the operator */
async function createAgents(cfg: LocalnetConfig, n: number): Promise<TestAgent[]> {
  const client = sdkClient(cfg);
  try {
    const agents: TestAgent[] = [];
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(8, n) }, async () => {
        while (next < n) {
          next++;
          const key = PrivateKey.generateED25519();
          const tx = new AccountCreateTransaction().setKeyWithoutAlias(key.publicKey).setInitialBalance(new Hbar(300)).setMaxAutomaticTokenAssociations(10);
          const receipt = await (await tx.execute(client)).getReceipt(client);
          const accountId = receipt.accountId!.toString();
          const privateKey = key.toStringDer();
          recordSecret(`chaos agent ${accountId} key`, privateKey);
          agents.push({ accountId, did: `did:hedera:local:${accountId}`, keyType: 'ED25519', privateKey });
        }
      }),
    );
    return agents;
  } finally {
    client.close();
  }
}

interface MirrorTx {
  transaction_id: string;
  consensus_timestamp?: string;
  result: string;
  memo_base64?: string;
  transfers?: { account: string; amount: number }[];
}

/** every transaction of an account, through the mirror's /api/v1/transactions?account.id= with paging */
async function accountTransactions(mirrorBase: string, accountId: string): Promise<MirrorTx[]> {
  const out: MirrorTx[] = [];
  let next: string | null = `/api/v1/transactions?account.id=${accountId}&result=success&order=asc&limit=100`;
  while (next) {
    const res = await fetch(new URL(next, mirrorBase));
    if (!res.ok) throw new Error(`mirror ${next}: ${res.status}`);
    const body = (await res.json()) as { transactions: MirrorTx[]; links?: { next: string | null } };
    out.push(...body.transactions);
    next = body.links?.next ?? null;
  }
  return out;
}

const memoOf = (t: MirrorTx) => (t.memo_base64 ? Buffer.from(t.memo_base64, 'base64').toString('utf8') : '');
const amountOf = (t: MirrorTx, account: string) => (t.transfers ?? []).filter((x) => x.account === account).reduce((s, x) => s + x.amount, 0);

export interface Audit {
  tasks: number;
  completed: number;
  cancelled: number;
  open: number;
  doubleMints: number;
  doublePayouts: number;
  lostTasks: number;
  lostPayments: number;
  violations: string[];
}

export async function auditLedger(a: { sql: Sql; temporal: TemporalClient; mirrorBase: string; cfg: LocalnetConfig; agents: TestAgent[]; knownTasks: Set<string>; boundMs: number }): Promise<Audit> {
  const violations: string[] = [];
  let doubleMints = 0;
  let doublePayouts = 0;
  let lostTasks = 0;
  let lostPayments = 0;

  // passports: payments to payTo, refunds from it, NFTs held, per agent
  const payTo = await accountTransactions(a.mirrorBase, a.cfg.payTo);
  for (const agent of a.agents) {
    const paid = payTo.filter((t) => amountOf(t, agent.accountId) < 0 && amountOf(t, a.cfg.payTo) > 0).length;
    const refunds = payTo.filter((t) => amountOf(t, agent.accountId) > 0 && amountOf(t, a.cfg.payTo) < 0).length;
    const res = await fetch(`${a.mirrorBase}/api/v1/accounts/${agent.accountId}/nfts?token.id=${a.cfg.passportTokenId}&limit=100`);
    const nfts = ((await res.json()) as { nfts?: unknown[] }).nfts?.length ?? 0;
    if (nfts > 1) {
      doubleMints++;
      violations.push(`${agent.accountId} holds ${nfts} passports`);
    }
    if (refunds > paid || nfts + refunds > paid) {
      doublePayouts++;
      violations.push(`${agent.accountId}: ${paid} payments, ${nfts} passports, ${refunds} refunds`);
    } else if (nfts + refunds < paid) {
      lostPayments++;
      // the rule of issue 23: a payment that reached the ledger ends as a passport or a refund within the bound
      const payments = payTo.filter((t) => amountOf(t, agent.accountId) < 0 && amountOf(t, a.cfg.payTo) > 0);
      const newest = payments[payments.length - 1];
      const ageS = newest?.consensus_timestamp ? Math.round(Date.now() / 1000 - Number(newest.consensus_timestamp)) : null;
      violations.push(`${agent.accountId}: ${paid} payments but ${nfts} passports and ${refunds} refunds (newest payment ${newest?.transaction_id ?? '?'} ${ageS ?? '?'} s old; bound ${Math.round(a.boundMs / 1000)} s)`);
    }
  }
  // and the service's own record agrees: no payment still verified or settled without an outcome after the
  // bound (a payment never settled is only known dead once its transaction's validity window is over)
  const unfinished = await a.sql<{ transaction_id: string; status: string; age_s: number }[]>`
    select p.transaction_id, p.status, extract(epoch from now() - p.created_at)::int as age_s
      from payments p
      left join passport_issuances i on i.payment_transaction_id = p.transaction_id
      left join passport_upgrades u on u.payment_transaction_id = p.transaction_id
     where p.status in ('verified', 'settled') and coalesce(i.status, u.status, 'none') not in ('issued', 'upgraded')
       and p.created_at < now() - make_interval(secs => ${a.boundMs / 1000})
       and (p.status = 'settled' or coalesce(p.valid_until, p.created_at + interval '180 seconds') < now() - make_interval(secs => ${a.boundMs / 1000}))`;
  for (const p of unfinished) {
    lostPayments++;
    violations.push(`payment ${p.transaction_id} is still ${p.status} without a passport or a refund ${p.age_s} s after it was recorded (bound ${Math.round(a.boundMs / 1000)} s)`);
  }

  // tasks: every task the clients saw and every task the projection holds
  const rows = await a.sql<{ task_id: string; status: string }[]>`select task_id, status from tasks`;
  const projection = new Map(rows.map((r) => [r.task_id, r.status]));
  const ids = new Set([...a.knownTasks, ...projection.keys()]);
  const escrow = await accountTransactions(a.mirrorBase, a.cfg.escrow);
  const byTask = new Map<string, { payouts: number; refunds: number; in: number; out: number }>();
  for (const t of escrow) {
    const m = /^task (\S+) (\w+)$/.exec(memoOf(t));
    if (!m) continue;
    const e = byTask.get(m[1]) ?? { payouts: 0, refunds: 0, in: 0, out: 0 };
    const amount = amountOf(t, a.cfg.escrow);
    if (m[2] === 'payout') e.payouts++;
    if (m[2] === 'refund') e.refunds++;
    if (amount > 0) e.in += amount;
    else e.out -= amount;
    byTask.set(m[1], e);
  }
  let completed = 0;
  let cancelled = 0;
  let open = 0;
  for (const id of ids) {
    const status = projection.get(id);
    let wf: string | undefined;
    try {
      wf = (await a.temporal.workflow.getHandle(taskWorkflowId(id)).query(taskStateQuery)).status;
    } catch (err) {
      wf = undefined;
      violations.push(`task ${id}: no workflow state (${String(err).slice(0, 120)})`);
    }
    if (!status || !wf || status !== wf) {
      lostTasks++;
      if (wf) violations.push(`task ${id}: projection ${status ?? 'missing'}, workflow ${wf}`);
      continue;
    }
    const e = byTask.get(id) ?? { payouts: 0, refunds: 0, in: 0, out: 0 };
    if (status === 'completed') {
      completed++;
      if (e.payouts > 1 || e.refunds > 0) {
        doublePayouts++;
        violations.push(`task ${id} completed: ${e.payouts} payouts, ${e.refunds} refunds`);
      } else if (e.payouts === 0 || e.in !== e.out) {
        lostPayments++;
        violations.push(`task ${id} completed: ${e.payouts} payouts, escrow in ${e.in} out ${e.out}`);
      }
    } else if (status === 'cancelled') {
      cancelled++;
      if (e.payouts > 0 || e.refunds > 1) {
        doublePayouts++;
        violations.push(`task ${id} cancelled: ${e.payouts} payouts, ${e.refunds} refunds`);
      } else if (e.in !== e.out) {
        lostPayments++;
        violations.push(`task ${id} cancelled: escrow in ${e.in} out ${e.out} (${e.refunds} refunds)`);
      }
    } else {
      open++;
      if (e.payouts + e.refunds > 0) {
        doublePayouts++;
        violations.push(`task ${id} ${status}: ${e.payouts} payouts, ${e.refunds} refunds`);
      }
    }
  }
  return { tasks: ids.size, completed, cancelled, open, doubleMints, doublePayouts, lostTasks, lostPayments, violations };
}

/** the table the run prints */
export function formatReport(r: ChaosReport): string {
  const ms = (v: number | null) => (v === null ? '-' : `${(v / 1000).toFixed(1)} s`);
  const rows: [string, string | number][] = [
    ['agents', r.agents],
    ['passports issued', r.passportsIssued],
    ['tasks (completed / cancelled / open)', `${r.tasks} (${r.completed} / ${r.cancelled} / ${r.open})`],
    r.kills.temporal
      ? ['kills (worker / api / localnet / temporal)', `${r.kills.worker + r.kills.api + r.kills.localnet + r.kills.temporal} (${r.kills.worker} / ${r.kills.api} / ${r.kills.localnet} / ${r.kills.temporal})`]
      : ['kills (worker / api / localnet)', `${r.kills.worker + r.kills.api + r.kills.localnet} (${r.kills.worker} / ${r.kills.api} / ${r.kills.localnet})`],
    ['localnet faults (busy / unavailable / slow)', `${r.faults.busy} / ${r.faults.unavailable} / ${r.faults.delay}`],
    ['double mints', r.doubleMints],
    ['double payouts', r.doublePayouts],
    ['lost tasks', r.lostTasks],
    ['lost payments', r.lostPayments],
    ['passport buyers that never came back after a lost answer', r.abandoned],
    ['final refusals (4xx) seen by clients', r.refusals],
    [`recovery after the last kill p50 / p99 / max (${r.recoveryMs.samples} ops)`, `${ms(r.recoveryMs.p50)} / ${ms(r.recoveryMs.p99)} / ${ms(r.recoveryMs.max)}`],
    ['duration', ms(r.durationMs)],
    ['escrow balance / held for funded, unpaid tasks (tinybars)', r.escrow ? `${r.escrow.balanceTinybars} / ${r.escrow.heldTinybars}` : '-'],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `| ${k.padEnd(w)} | ${String(v)} |`);
  if (r.violations.length) lines.push(`VIOLATIONS (${r.violations.length}):`, ...r.violations.slice(0, 50).map((v) => `  - ${v}`));
  else lines.push('no violation');
  return lines.join('\n');
}
