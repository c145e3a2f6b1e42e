/**
 * npm run dev:cluster: the same stack as `npm run dev`, production-shaped (DESIGN.md section 11, "The
 * cluster"; issue 22):
 *   - the Temporal server itself (scripts/lib/temporalCluster.ts: the version the CLI embeds, built from
 *     the Go module proxy into ~/.cache/agent-passport/bin on first use), on PostgreSQL persistence and
 *     PostgreSQL SQL visibility, schemas installed by its own SQL tool; the namespace and search
 *     attributes set up by the code of `npm run temporal:setup`; its Web UI server with the codec endpoint;
 *   - one PostgreSQL and one Redis shared by two workers and two API instances (one task queue);
 *   - one entry point on PORT (3000): Debian's HAProxy on deploy/haproxy.cfg, the file docker-compose.yml
 *     uses, rendered with the local ports (scripts/lib/haproxy.ts), spreading requests over the APIs
 *     (PORT+1, PORT+2); its own metrics on HAPROXY_METRICS_PORT (8405);
 *   - metrics (issue 30): api-1, api-2, worker-1, worker-2 serve theirs on METRICS_PORT (9464) .. +3, and a
 *     real Prometheus (Debian's package, scripts/lib/prometheus.ts) on PROMETHEUS_PORT (9090) scrapes them
 *     and HAProxy every 5 s with the alert rules of deploy/prometheus/ loaded;
 *   - localnet and the local EVM node as in `npm run dev`.
 * Everything but PostgreSQL and Redis is supervised (restarted when it dies, as a process manager would);
 * Ctrl-C stops everything it started; so does a failed start. State: .data/cluster (DEV_DATA_DIR).
 */
import fs from 'node:fs';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import { loadConfig } from '../config/index.js';
import { setupNamespace } from '../temporal/setup.js';
import { startHaproxy } from './lib/haproxy.js';
import { startPrometheus } from './lib/prometheus.js';
import { superviseChild, startChild, waitForReady } from './lib/children.js';
import { apiStage, devEnv, devSecrets, evmStage, localnetJsonStage, localnetStage, postgresStage, prefixed, productionLedgerEnv, workerStage } from './lib/devStages.js';
import { assertPortFree, launch, type Stage, type StageResult } from './lib/launcher.js';
import { resolveRedis } from './lib/redis.js';
import { clusterServing, defaultClusterPorts, prepareTemporalCluster, serverCommand, serverPorts, uiCommand, uiServing } from './lib/temporalCluster.js';

if (fs.existsSync('.env')) process.loadEnvFile('.env');

const DATA = path.resolve(process.env.DEV_DATA_DIR ?? path.join('.data', 'cluster'));
// its processes run as production (below): the launcher refuses up front what they would refuse
const config = loadConfig({ ...process.env, NODE_ENV: 'production' });
const secrets = devSecrets(DATA);
const entryPort = config.PORT;
const apiPorts = [entryPort + 1, entryPort + 2];
/** metrics endpoints: api-1, api-2, worker-1, worker-2; HAProxy's; the Prometheus scraping them */
const metricsBase = config.METRICS_PORT ?? 9464;
const metricsPorts = { api: [metricsBase, metricsBase + 1], worker: [metricsBase + 2, metricsBase + 3] };
const haproxyMetricsPort = Number(process.env.HAPROXY_METRICS_PORT ?? 8405);
const prometheusPort = Number(process.env.PROMETHEUS_PORT ?? 9090);
/**
 * The service's public origin: the entry point's (or PUBLIC_BASE_URL when set, e.g. a tunnel in front
 * of it). Both APIs get it as PUBLIC_BASE_URL, so their sign-in challenges name it, and clients are
 * pointed at the same URL (localnet.json apiUrl, what `npm run demo` and the CLI call): a client signs
 * only a challenge naming the origin it called.
 */
const publicUrl = (config.PUBLIC_BASE_URL ?? `http://127.0.0.1:${entryPort}`).replace(/\/+$/, '');

/** a child's output into a log file of the data directory (the Temporal server logs a lot at start-up) */
function logFile(name: string): { path: string; write: (line: string) => void } {
  const file = path.join(DATA, 'logs', `${name}.log`);
  fs.mkdirSync(path.dirname(file), { recursive: true });
  const stream = fs.createWriteStream(file, { flags: 'a' });
  return { path: file, write: (line) => stream.write(`${line}\n`) };
}

const appDatabase = (url: string) => decodeURIComponent(new URL(url).pathname.slice(1)) || 'agent_passport_cluster';

const redisStage: Stage = {
  name: 'redis',
  async start(_env, ctx) {
    const redis = await resolveRedis({ redisUrl: config.REDIS_URL, dataDir: path.join(DATA, 'redis'), log: ctx.log, signal: ctx.signal });
    ctx.onStop('redis', redis.stop);
    ctx.log(`${redis.source} ${redis.url}`);
    return { env: { REDIS_URL: redis.url }, urls: { Redis: redis.url } };
  },
};

const temporalStage: Stage = {
  name: 'temporal cluster',
  async start(env, ctx): Promise<StageResult> {
    if (config.TEMPORAL_ADDRESS) return { env: { TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS }, urls: { Temporal: `${config.TEMPORAL_ADDRESS} (external)` } };
    const ports = defaultClusterPorts(Number(process.env.TEMPORAL_PORT ?? 7233), Number(process.env.TEMPORAL_UI_PORT ?? 8233));
    for (const port of serverPorts(ports)) await assertPortFree(port, 'Temporal server', 'TEMPORAL_PORT');
    await assertPortFree(ports.ui!, 'Temporal Web UI', 'TEMPORAL_UI_PORT');
    const cluster = await prepareTemporalCluster({
      dir: path.join(DATA, 'temporal'),
      databaseUrl: env.DATABASE_URL!,
      // beside the app's database, named after it
      databases: { main: `${appDatabase(env.DATABASE_URL!)}_temporal`, visibility: `${appDatabase(env.DATABASE_URL!)}_temporal_visibility` },
      ports,
      // API 1 directly. A production API answers the codec only with the admin token, which the Web UI
      // cannot send (NOTES.md): the UI shows payloads encrypted; `temporal ... --codec-auth` decodes (README)
      codecEndpoint: `http://localhost:${apiPorts[0]}/codec`,
      uiWriteActions: process.env.TEMPORAL_DISABLE_WRITE_ACTIONS === 'false', // the UI image's own variable, as in docker-compose.yml
      log: ctx.log,
    });

    const serverLog = logFile('temporal-server');
    const [serverBin, serverArgs] = serverCommand(cluster);
    const server = superviseChild(() => startChild('temporal-server', serverBin, serverArgs, { output: serverLog.write }), prefixed('supervisor'));
    ctx.onStop('temporal server', () => server.stop());
    await waitForReady(server.current, { what: 'the Temporal server', ready: () => clusterServing(cluster.address), signal: ctx.signal, log: ctx.log, pollMs: 500 });
    ctx.log(`Temporal server ${cluster.address} on PostgreSQL (log: ${serverLog.path})`);

    // npm run temporal:setup's code: the namespace with its retention and the search attributes
    const connection = await Connection.connect({ address: cluster.address });
    try {
      await setupNamespace({ connection, namespace: config.TEMPORAL_NAMESPACE, retentionDays: config.TEMPORAL_NAMESPACE_RETENTION_DAYS, log: ctx.log });
    } finally {
      await connection.close();
    }

    const uiLog = logFile('temporal-ui');
    const [uiBin, uiArgs] = uiCommand(cluster);
    const ui = superviseChild(() => startChild('temporal-ui', uiBin, uiArgs, { output: uiLog.write }), prefixed('supervisor'));
    ctx.onStop('temporal ui', () => ui.stop());
    await waitForReady(ui.current, { what: 'the Temporal Web UI server', ready: () => uiServing(ports.ui!), signal: ctx.signal, log: ctx.log });
    return {
      env: { TEMPORAL_ADDRESS: cluster.address },
      urls: {
        'Temporal frontend': `${cluster.address} (Temporal server ${path.basename(serverBin)}, PostgreSQL persistence and visibility)`,
        'Temporal Web UI': `${cluster.uiUrl!}${process.env.TEMPORAL_DISABLE_WRITE_ACTIONS === 'false' ? '' : ' (read-only: TEMPORAL_DISABLE_WRITE_ACTIONS=false enables write actions)'}`,
      },
    };
  },
};

const haproxyStage: Stage = {
  name: 'entry point',
  async start(_env, ctx) {
    await assertPortFree(entryPort, 'entry point', 'PORT');
    await assertPortFree(haproxyMetricsPort, "HAProxy's metrics", 'HAPROXY_METRICS_PORT');
    const log = logFile('haproxy');
    const haproxy = await startHaproxy({ dir: path.join(DATA, 'haproxy'), entryPort, metricsPort: haproxyMetricsPort, apiPorts, log: ctx.log, output: log.write, signal: ctx.signal });
    ctx.onStop('entry point', haproxy.stop);
    return {
      urls: {
        API: `${publicUrl} (HAProxy on :${entryPort}, deploy/haproxy.cfg, spread over ${apiPorts.map((p) => `:${p}`).join(' and ')}; the origin sign-in challenges name)`,
        'API reference': `${publicUrl}/docs`,
        OpenAPI: `${publicUrl}/openapi.json`,
        'Admin token': `in ${path.join(DATA, 'dev-secrets.json')}`,
      },
    };
  },
};

const prometheusStage: Stage = {
  name: 'prometheus',
  async start(_env, ctx) {
    await assertPortFree(prometheusPort, 'Prometheus', 'PROMETHEUS_PORT');
    const targets = (ports: number[]) => ports.map((p) => `127.0.0.1:${p}`);
    const log = logFile('prometheus');
    const prometheus = await startPrometheus({
      dir: path.join(DATA, 'prometheus'),
      port: prometheusPort,
      jobs: [
        { job: 'api', targets: targets(metricsPorts.api) },
        { job: 'worker', targets: targets(metricsPorts.worker) },
        { job: 'haproxy', targets: targets([haproxyMetricsPort]) },
      ],
      scrapeIntervalS: 5,
      evaluationIntervalS: 5,
      log: ctx.log,
      output: log.write,
      signal: ctx.signal,
    });
    ctx.onStop('prometheus', prometheus.stop);
    return {
      urls: {
        Prometheus: `${prometheus.url} (scrapes api-1, api-2, worker-1, worker-2 and HAProxy every 5 s; alert rules of deploy/prometheus/ loaded: ${prometheus.url}/alerts)`,
        Metrics: `api ${targets(metricsPorts.api).join(' ')}; worker ${targets(metricsPorts.worker).join(' ')}; HAProxy 127.0.0.1:${haproxyMetricsPort} (each at /metrics; dashboard: deploy/grafana/agent-passport.json)`,
      },
    };
  },
};

// Every worker and API runs as production (issue 26 item 5): Temporal payloads encrypted with the
// cluster's PAYLOAD_CODEC_KEY (dev-secrets.json), the codec only with the admin token, the production
// start-up checks, with the ledger variables production requires taken from localnet.json (the escrow
// key for the workers only).
const processEnv = { ...devEnv(secrets), NODE_ENV: 'production' };
const ledgerEnv = (env: Record<string, string>) => productionLedgerEnv(env.LOCALNET_CONFIG_PATH!);
const workerEnv = (env: Record<string, string>) => ({ ...ledgerEnv(env).all, ...ledgerEnv(env).worker });
// the API instances sit behind the entry point: they believe the X-Forwarded-For of its address only (as
// production lists its proxies; `true` is refused there), and name the public origin in their challenges
const apiEnv = (env: Record<string, string>) => ({ TRUST_PROXY: '127.0.0.1', PUBLIC_BASE_URL: publicUrl, ...ledgerEnv(env).all });

await launch({
  title: 'Agent passport cluster is up',
  env: processEnv,
  stages: [
    postgresStage({ dataDir: DATA, databaseUrl: config.DATABASE_URL, database: 'agent_passport_cluster' }),
    redisStage,
    temporalStage,
    localnetStage({ dataDir: DATA }),
    evmStage({ dataDir: DATA, externalRpcUrl: config.EVM_RPC_URL, port: Number(process.env.EVM_PORT ?? 8545) }),
    localnetJsonStage({ dataDir: DATA, apiUrl: publicUrl, adminToken: secrets.adminToken }),
    workerStage({ name: 'worker-1', env: (env) => ({ ...workerEnv(env), METRICS_PORT: String(metricsPorts.worker[0]) }) }),
    workerStage({ name: 'worker-2', env: (env) => ({ ...workerEnv(env), METRICS_PORT: String(metricsPorts.worker[1]) }) }),
    apiStage({ name: 'api-1', port: apiPorts[0]!, env: (env) => ({ ...apiEnv(env), METRICS_PORT: String(metricsPorts.api[0]) }) }),
    apiStage({ name: 'api-2', port: apiPorts[1]!, env: (env) => ({ ...apiEnv(env), METRICS_PORT: String(metricsPorts.api[1]) }) }),
    haproxyStage,
    prometheusStage,
  ],
});
