/**
 * The production-shaped topology for the `cluster` test project and bench/market.ts: on the Temporal
 * server of the project's global setup (test/cluster/global-setup.ts), a namespace of its own (set up by
 * temporal:setup's code), one PostgreSQL database, one Redis, N worker processes and two API processes
 * (the real entry points, as child processes that can be SIGKILLed) behind HAProxy on deploy/haproxy.cfg
 * (scripts/lib/haproxy.ts), each process serving its metrics on a port of its own (METRICS_PORT);
 * localnet, and optionally anvil with the contracts and a DNS server and a web site for the trust flows.
 * The workers and APIs run as production (issue 26 item 5): payloads encrypted with a PAYLOAD_CODEC_KEY
 * of the run, every variable production requires.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { inject } from 'vitest';
import { Client, Connection } from '@temporalio/client';
import { dataConverter } from '../../temporal/connection.js';
import { createSql, type Sql } from '../../db/client.js';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import { startHaproxy, type Haproxy } from '../../scripts/lib/haproxy.js';
import { freeLowPorts, isPortOpen } from '../../scripts/lib/ports.js';
import { clusterServing } from '../../scripts/lib/temporalCluster.js';
import { productionLedgerEnv } from '../../scripts/lib/devStages.js';
import { setupNamespace } from '../../temporal/setup.js';
import { Stack, type StackParts } from '../chaos/chaos.js';
import { startChildProcess, startChildWorker, type ChildWorker } from '../reliability/childWorker.js';
import { startLedgerStack, type LedgerStack } from '../support/ledgerStack.js';
import { dumpDatabase, recordSecret } from '../support/secrets.js';
import { startTestDns, type TestDnsServer } from '../support/testDns.js';
import { startTestSite, type TestSite } from '../support/testSite.js';
import { startTestChain, type TestChain } from '../evm/helpers.js';

export const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Where the cluster's services are: the test project's global setup (inject), or given (bench/). */
export interface ClusterServices {
  temporalAddress: string;
  databaseUrl: string;
}
const injected = (): ClusterServices => ({ temporalAddress: inject('temporalAddress'), databaseUrl: inject('databaseUrl') });

/** A namespace of its own on the cluster (workflow ids such as passport:local:0.0.N repeat across localnets). */
export async function clusterNamespace(prefix: string, log: (line: string) => void = () => {}, services: ClusterServices = injected()): Promise<{ namespace: string; client: Client; close(): Promise<void> }> {
  const namespace = `${prefix}-${randomBytes(3).toString('hex')}`;
  const connection = await Connection.connect({ address: services.temporalAddress });
  await setupNamespace({ connection, namespace, retentionDays: 1, log });
  return { namespace, client: new Client({ connection, namespace }), close: () => connection.close() };
}

/**
 * kill -9 of the Temporal server of the global setup; resolves once its supervisor has started a new
 * one and it serves again (the downtime, in ms).
 */
export async function killTemporalServer(): Promise<number> {
  const pidFile = inject('temporalPidFile');
  const pid = Number(fs.readFileSync(pidFile, 'utf8'));
  const t0 = Date.now();
  process.kill(pid, 'SIGKILL');
  while (Number(fs.readFileSync(pidFile, 'utf8')) === pid || !(await clusterServing(inject('temporalAddress')))) await sleep(200);
  return Date.now() - t0;
}

/** A migrated database of its own beside the run's (dumped for the secrets scan, then dropped). */
export async function ownDatabase(prefix: string, services: ClusterServices = injected()): Promise<{ url: string; drop(): Promise<void> }> {
  const base = new URL(services.databaseUrl);
  const u = new URL(base.toString());
  u.pathname = `/${`${base.pathname.slice(1)}_${prefix}_${randomBytes(3).toString('hex')}`.slice(0, 63)}`;
  await ensureDatabase(u.toString());
  await migrate(u.toString());
  return { url: u.toString(), drop: () => dumpDatabase(u.toString()).then(() => dropDatabase(u.toString())).catch(() => {}) };
}

/**
 * The secrets a production worker and API refuse to start without, fresh for one run and recorded for
 * the secrets scan: the payload codec key, the admin token (its digest), the trust snapshot and OAuth
 * signing keys. `env` is for both kinds of process (NODE_ENV=production); the ledger's variables come
 * from its localnet.json (productionLedgerEnv).
 */
export function productionSecrets(run: string): { codecKey: string; adminToken: string; env: Record<string, string> } {
  const codecKey = randomBytes(32).toString('hex');
  recordSecret('cluster payload codec key', codecKey);
  const adminToken = randomBytes(24).toString('base64url');
  recordSecret('cluster admin token', adminToken);
  const trustKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('hex');
  recordSecret('cluster trust signing key', trustKey);
  const oauthKey = generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('hex');
  recordSecret('cluster OAuth signing key', oauthKey);
  return {
    codecKey,
    adminToken,
    env: {
      NODE_ENV: 'production',
      PAYLOAD_CODEC_KEY: codecKey,
      ADMIN_TOKEN_SHA256: createHash('sha256').update(adminToken).digest('hex'),
      TRUST_SIGNING_KEY: trustKey,
      TRUST_SIGNING_KEY_ID: `cluster-${run}`,
      OAUTH_SIGNING_KEY: oauthKey,
      OAUTH_SIGNING_KEY_ID: `cluster-oauth-${run}`,
    },
  };
}

/** A client of the namespace that reads the production processes' encrypted payloads. */
export function codecClient(client: Client, codecKey: string): Client {
  return new Client({ connection: client.connection, namespace: client.options.namespace, dataConverter: dataConverter({ NODE_ENV: 'production', PAYLOAD_CODEC_KEY: codecKey }) });
}

export function redisUrl(): string {
  return process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';
}

/** An API process (api/server.ts of `tree`, default this repository), ready once GET /health answers 200. */
export async function startApiProcess(env: Record<string, string>, o: { name?: string; tree?: string } = {}): Promise<ChildWorker> {
  const url = `http://127.0.0.1:${env.PORT}`;
  // our API's answer, not just any 200 (on a shared machine another process can take a port picked free a moment before)
  const probe = async () => {
    const r = await fetch(`${url}/health`).catch(() => null);
    return r?.status === 200 && ((await r.json().catch(() => ({}))) as { status?: string }).status === 'ok';
  };
  const tree = o.tree ?? root;
  return startChildProcess({ name: o.name ?? 'api', entry: path.join(tree, 'api', 'server.ts'), cwd: tree, env, ready: probe, readyTimeoutMs: 300_000 });
}

/** A worker process (worker/index.ts of `tree`), ready once it polls its task queue. */
export async function startWorkerProcess(env: Record<string, string>, o: { name?: string; tree?: string } = {}): Promise<ChildWorker> {
  const tree = o.tree ?? root;
  if (tree === root) return startChildWorker(env, 300_000);
  return startChildProcess({ name: o.name ?? 'worker', entry: path.join(tree, 'worker', 'index.ts'), cwd: tree, env, readyText: 'worker polling task queue', readyTimeoutMs: 300_000 });
}

export interface ClusterApp {
  namespace: string;
  /** a client of the namespace, with the run's payload codec */
  client: Client;
  ledger: LedgerStack;
  sql: Sql;
  databaseUrl: string;
  chain?: TestChain;
  dns?: TestDnsServer;
  site?: TestSite;
  /** trust test domains, each served by `site` and resolved by `dns` */
  domains: string[];
  adminToken: string;
  taskQueue: string;
  /** environment of the worker and API processes (PORT excluded) */
  workerEnv: Record<string, string>;
  apiEnv: Record<string, string>;
  apiPorts: number[];
  apis: ChildWorker[];
  workers: ChildWorker[];
  entry: Haproxy;
  /** where each process serves its metrics (host:port), by scrape job: what a Prometheus scrapes */
  metricsTargets: { api: string[]; worker: string[]; haproxy: string[] };
  apiUrl(i: number): string;
  /**
   * with trustDomains: one more API, NODE_ENV=test, for the trust flows only. Their web site and DNS
   * answers are on loopback, which only the SSRF guard's off switches (TRUST_ALLOW_PRIVATE,
   * TRUST_FETCH_ORIGINS) reach, and production refuses those (issue 26 item 5)
   */
  trustApiUrl?: string;
  restartApi(i: number): Promise<void>;
  stop(): Promise<void>;
}

export interface ClusterAppOptions {
  prefix: string;
  workers?: number;
  /** anvil with both contracts, and the attester key for the worker */
  evm?: boolean;
  /** loopback DNS server and web site for these many trust domains */
  trustDomains?: number;
  log?: (line: string) => void;
  /** start no worker and no API (the caller starts its own, e.g. from another version's tree) */
  noProcesses?: boolean;
  /** default: the test project's global setup */
  services?: ClusterServices;
  /** more environment for the API processes (e.g. the bench lifts the per-poster posting caps) */
  apiEnv?: Record<string, string>;
}

export async function startClusterApp(o: ClusterAppOptions): Promise<ClusterApp> {
  const log = o.log ?? (() => {});
  const services = o.services ?? injected();
  const ns = await clusterNamespace(o.prefix, log, services);
  const ledger = await startLedgerStack(o.prefix);
  const db = await ownDatabase(o.prefix, services);
  const sql = createSql(db.url, { max: 4 });
  const chain = o.evm ? await startTestChain({ chainId: 700_000 + Math.floor(Math.random() * 90_000) }) : undefined;
  const dns = o.trustDomains ? await startTestDns() : undefined;
  const site = o.trustDomains ? await startTestSite() : undefined;
  const run = randomBytes(3).toString('hex');
  const domains = Array.from({ length: o.trustDomains ?? 0 }, (_, i) => `d${i}-${run}.cluster.test`);
  for (const d of domains) dns!.setA(d, ['127.0.0.1']);
  site?.files.set('/robots.txt', 'User-agent: *\nAllow: /\n');

  const secrets = productionSecrets(run);
  const adminToken = secrets.adminToken;
  const ledgerEnv = productionLedgerEnv(ledger.env.LOCALNET_CONFIG_PATH!);
  const taskQueue = `${o.prefix}-${run}`;
  const common: Record<string, string> = {
    ...ledger.env,
    ...ledgerEnv.all,
    ...secrets.env,
    DATABASE_URL: db.url,
    TEMPORAL_ADDRESS: services.temporalAddress,
    TEMPORAL_NAMESPACE: ns.namespace,
    TEMPORAL_TASK_QUEUE: taskQueue,
    LOG_LEVEL: 'warn',
    ...(dns ? { TRUST_DNS_SERVERS: dns.address } : {}),
    ...(chain
      ? {
          EVM_RPC_URL: chain.anvil.rpcUrl,
          EVM_CHAIN_ID: String(chain.anvil.chainId),
          PASSPORT_CONTRACT_ADDRESS: chain.addresses.passport,
          ESCROW_CONTRACT_ADDRESS: chain.addresses.escrow,
          INDEXER_CONFIRMATIONS: '0',
        }
      : {}),
  };
  const workerEnv = { ...common, ...ledgerEnv.worker, ...(chain ? { EVM_ATTESTER_KEY: chain.anvil.accounts[0]!.privateKey } : {}) };
  // the entry point first, on a port picked with the APIs': its origin is the service's public one
  // (PUBLIC_BASE_URL, which sign-in challenges name), as a load balancer's is in production
  const workerCount = o.workers ?? 2;
  const [entryPort, haproxyMetricsPort, ...ports] = await freeLowPorts(4 + 2 + workerCount + (o.trustDomains ? 1 : 0));
  const apiPorts = ports.slice(0, 2);
  const apiMetricsPorts = ports.slice(2, 4);
  const workerMetricsPorts = ports.slice(4, 4 + workerCount);
  const trustPort = o.trustDomains ? ports[4 + workerCount] : undefined;
  const entryDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-haproxy-'));
  const entry = await startHaproxy({ dir: entryDir, entryPort: entryPort!, metricsPort: haproxyMetricsPort!, apiPorts, log });
  const apiEnv = {
    ...common,
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: entry.url,
    REDIS_URL: redisUrl(),
    // the entry point's address only (as production lists its proxies), not `true`
    TRUST_PROXY: '127.0.0.1',
    RATE_LIMIT_MAX: '1000000',
    ...o.apiEnv,
  };
  const workers: ChildWorker[] = [];
  const apis: ChildWorker[] = [];
  const workerEnvOf = (i: number) => ({ ...workerEnv, METRICS_PORT: String(workerMetricsPorts[i]) });
  const apiEnvOf = (i: number) => ({ ...apiEnv, PORT: String(apiPorts[i]), METRICS_PORT: String(apiMetricsPorts[i]) });
  if (!o.noProcesses) workers.push(...(await Promise.all(Array.from({ length: workerCount }, (_, i) => startWorkerProcess(workerEnvOf(i), { name: `worker-${i + 1}` })))));
  if (!o.noProcesses) {
    apis.push(...(await Promise.all(apiPorts.map((_, i) => startApiProcess(apiEnvOf(i), { name: `api-${i + 1}` })))));
  }
  const trustApi =
    trustPort && !o.noProcesses
      ? await startApiProcess(
          { ...apiEnv, PORT: String(trustPort), NODE_ENV: 'test', TRUST_ALLOW_PRIVATE: 'true', TRUST_FETCH_ORIGINS: domains.map((d) => `${d}=${site!.origin}`).join(',') },
          { name: 'trust-api' },
        )
      : undefined;
  log(`cluster app ${o.prefix}: namespace ${ns.namespace}, ${workers.length} workers, ${apis.length} APIs (${apiPorts.join(', ')}) behind ${entry.url}`);

  const app: ClusterApp = {
    namespace: ns.namespace,
    client: codecClient(ns.client, secrets.codecKey),
    ledger,
    sql,
    databaseUrl: db.url,
    chain,
    dns,
    site,
    domains,
    adminToken,
    taskQueue,
    workerEnv,
    apiEnv,
    apiPorts,
    apis,
    workers,
    entry,
    metricsTargets: {
      api: apiMetricsPorts.map((p) => `127.0.0.1:${p}`),
      worker: workerMetricsPorts.map((p) => `127.0.0.1:${p}`),
      haproxy: [`127.0.0.1:${haproxyMetricsPort}`],
    },
    apiUrl: (i) => `http://127.0.0.1:${apiPorts[i]}`,
    trustApiUrl: trustApi ? `http://127.0.0.1:${trustPort}` : undefined,
    async restartApi(i) {
      await apis[i]?.kill('SIGKILL');
      apis[i] = await startApiProcess(apiEnvOf(i), { name: `api-${i + 1}` });
    },
    async stop() {
      await entry.stop();
      fs.rmSync(entryDir, { recursive: true, force: true });
      for (const p of [...apis, ...workers, ...(trustApi ? [trustApi] : [])]) await p.kill('SIGTERM').catch(() => null);
      for (const port of [...apiPorts, ...(trustApi ? [trustPort!] : [])]) while (await isPortOpen(port)) await sleep(100);
      await ns.close();
      await sql.end({ timeout: 5 });
      await db.drop();
      await ledger.stop();
      await chain?.anvil.stop();
      await dns?.close();
      await site?.close();
    },
  };
  return app;
}

/**
 * The chaos run's stack in the cluster topology (test/chaos/chaos.ts makeStack): its localnet as
 * usual, two workers and two APIs behind the entry point, on the cluster's Temporal server; the kill
 * targets are one worker (the first), one API (the first: the second keeps serving, which is checked
 * at each kill) and the Temporal server itself.
 */
export class ClusterChaosStack extends Stack {
  workers: ChildWorker[] = [];
  apis: ChildWorker[] = [];
  apiPorts: number[] = [];
  entry!: Haproxy;
  private entryDir?: string;
  /** answers the second API gave directly while the first was down (one probe per API kill) */
  secondApiAnswers: { status: number; ms: number }[] = [];
  temporalDowntimesMs: number[] = [];

  /** production (issue 26 item 5): `production` is productionSecrets(...).env; the ledger's variables are added once localnet has written its localnet.json */
  constructor(
    parts: StackParts,
    readonly extra: { namespace: string; redisUrl: string; production: Record<string, string> },
  ) {
    super({
      ...parts,
      apiEnv: { ...parts.apiEnv, ...extra.production, TEMPORAL_NAMESPACE: extra.namespace, REDIS_URL: extra.redisUrl, TRUST_PROXY: '127.0.0.1' },
      workerEnv: { ...parts.workerEnv, ...extra.production, TEMPORAL_NAMESPACE: extra.namespace },
    });
  }

  private startApiOn(i: number) {
    return startApiProcess({ ...this.apiEnv, PORT: String(this.apiPorts[i]), PUBLIC_BASE_URL: this.entry.url }, { name: `api-${i + 1}` });
  }

  override async startServices(): Promise<void> {
    // called once localnet is up: the ledger variables production requires, from its localnet.json
    const ledger = productionLedgerEnv(this.apiEnv.LOCALNET_CONFIG_PATH!);
    Object.assign(this.apiEnv, ledger.all);
    Object.assign(this.workerEnv, ledger.all, ledger.worker);
    const [entryPort, metricsPort, ...apiPorts] = await freeLowPorts(4);
    this.apiPorts = apiPorts;
    // the entry point's origin is the public one the APIs' sign-in challenges name
    this.entryDir = fs.mkdtempSync(path.join(os.tmpdir(), 'chaos-haproxy-'));
    this.entry = await startHaproxy({ dir: this.entryDir, entryPort: entryPort!, metricsPort: metricsPort!, apiPorts: this.apiPorts });
    this.apiUrl = this.entry.url;
    this.workers = await Promise.all([0, 1].map((i) => startWorkerProcess(this.workerEnv, { name: `worker-${i + 1}` })));
    this.apis = await Promise.all([0, 1].map((i) => this.startApiOn(i)));
    this.worker = this.workers[0]!;
    this.api = this.apis[0]!;
  }

  override async killAndRestart(target: 'worker' | 'api' | 'localnet' | 'temporal'): Promise<void> {
    if (target === 'temporal') {
      this.temporalDowntimesMs.push(await killTemporalServer());
      return;
    }
    if (target === 'worker') {
      await this.workers[0]!.kill('SIGKILL');
      this.workers[0] = this.worker = await startWorkerProcess(this.workerEnv, { name: 'worker-1' });
      return;
    }
    if (target === 'api') {
      await this.apis[0]!.kill('SIGKILL');
      // the second API serves meanwhile, directly (not only through the entry point)
      const t0 = Date.now();
      const r = await fetch(`http://127.0.0.1:${this.apiPorts[1]}/market/tasks?limit=1`, { signal: AbortSignal.timeout(60_000) }).catch(() => null);
      this.secondApiAnswers.push({ status: r?.status ?? 0, ms: Date.now() - t0 });
      this.apis[0] = this.api = await this.startApiOn(0);
      return;
    }
    await super.killAndRestart(target);
  }

  override async stop(): Promise<void> {
    await this.entry?.stop();
    if (this.entryDir) fs.rmSync(this.entryDir, { recursive: true, force: true });
    for (const p of [...this.workers, ...this.apis, this.localnet]) await p?.kill('SIGTERM').catch(() => null);
  }
}
