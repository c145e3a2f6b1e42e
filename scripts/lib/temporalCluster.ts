/**
 * The Temporal server itself (not the CLI's dev server) for `npm run dev:cluster`, `npm run test:cluster`
 * and the cluster bench: the multi-service server binary at the version the Temporal CLI v1.5.1 embeds,
 * built from the Go module proxy into ~/.cache/agent-passport/bin (scripts/lib/goInstall.ts), on
 * PostgreSQL persistence and PostgreSQL SQL visibility. The databases and their schemas are installed by
 * the server's own SQL tool (temporal-sql-tool: create-database, setup-schema -v 0.0, update-schema with
 * the schemas embedded in the tool; each step is idempotent). The Web UI server (ui-server, the version
 * the CLI embeds) is pointed at the frontend, with the codec endpoint of the API.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { Connection } from '@temporalio/client';
import { startChild, waitForReady, type ManagedChild } from './children.js';
import { findOrBuild, type GoProgram } from './goInstall.js';
import { freeLowPort, isPortOpen } from './ports.js';

/** What the Temporal CLI v1.5.1 embeds (`temporal --version`: "Server 1.29.1, UI 2.42.1"; its go.mod). */
export const TEMPORAL_SERVER_VERSION = '1.29.1';
export const TEMPORAL_UI_VERSION = '2.42.1';

export const CLUSTER_PROGRAMS = {
  server: { what: 'the Temporal server', module: `go.temporal.io/server/cmd/server@v${TEMPORAL_SERVER_VERSION}`, binary: 'temporal-server' },
  sqlTool: { what: "the Temporal server's SQL tool", module: `go.temporal.io/server/cmd/tools/sql@v${TEMPORAL_SERVER_VERSION}`, binary: 'temporal-sql-tool' },
  ui: { what: 'the Temporal Web UI server', module: `github.com/temporalio/ui-server/v2/cmd/server@v${TEMPORAL_UI_VERSION}`, binary: 'temporal-ui-server' },
} satisfies Record<string, GoProgram>;

export interface ClusterBinaries {
  server: string;
  sqlTool: string;
  ui: string;
}

/** The three binaries from the cache, built there on first use (minutes: progress is shown). */
export async function findOrBuildClusterBinaries(log: (line: string) => void): Promise<ClusterBinaries> {
  return {
    server: await findOrBuild(CLUSTER_PROGRAMS.server, log),
    sqlTool: await findOrBuild(CLUSTER_PROGRAMS.sqlTool, log),
    ui: await findOrBuild(CLUSTER_PROGRAMS.ui, log),
  };
}

export interface ClusterPorts {
  frontend: number;
  frontendHttp: number;
  history: number;
  matching: number;
  worker: number;
  /** membership (ringpop) ports of frontend, history, matching, worker */
  membership: [number, number, number, number];
  ui?: number;
}

/**
 * The dev:cluster ports: the dev server's 7233 and 8233, the server's own defaults for the rest (history
 * 7234, matching 7235, worker 7239, HTTP 7243, membership 6933-6939), all moved with TEMPORAL_PORT.
 */
export function defaultClusterPorts(frontend = 7233, ui: number | undefined = 8233): ClusterPorts {
  return {
    frontend,
    frontendHttp: frontend + 10,
    history: frontend + 1,
    matching: frontend + 2,
    worker: frontend + 6,
    membership: [frontend - 300, frontend - 299, frontend - 298, frontend - 294],
    ui,
  };
}

export async function freeClusterPorts(withUi = false): Promise<ClusterPorts> {
  // below the ephemeral range: membership ports must fit a smallint, and no port-0 bind takes them meanwhile
  const taken = new Set<number>();
  const p = () => freeLowPort([0], taken);
  return {
    frontend: await p(),
    frontendHttp: await p(),
    history: await p(),
    matching: await p(),
    worker: await p(),
    membership: [await p(), await p(), await p(), await p()],
    ui: withUi ? await p() : undefined,
  };
}

export interface ClusterOptions {
  /** where the server's and the UI's configuration files are written */
  dir: string;
  /** any database URL of the PostgreSQL server to use (its host, port, user and password are taken) */
  databaseUrl: string;
  /** the two databases (created when missing): default temporal, temporal_visibility */
  databases?: { main: string; visibility: string };
  ports: ClusterPorts;
  /** the API's codec endpoint, for the Web UI */
  codecEndpoint?: string;
  /** the Web UI's write actions (terminate, cancel, signal, reset, start, batch): off unless asked for */
  uiWriteActions?: boolean;
  numHistoryShards?: number;
  log: (line: string) => void;
}

export interface PreparedCluster {
  binaries: ClusterBinaries;
  options: ClusterOptions;
  address: string;
  uiUrl?: string;
}

function pgOf(databaseUrl: string) {
  const u = new URL(databaseUrl);
  return { host: u.hostname || '127.0.0.1', port: Number(u.port || 5432), user: decodeURIComponent(u.username || 'postgres'), password: decodeURIComponent(u.password) };
}

function run(bin: string, args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    child.on('error', (err) => resolve({ code: null, out: String(err) }));
    child.on('exit', (code) => resolve({ code, out }));
  });
}

/** Creates both databases and installs or upgrades their schemas with temporal-sql-tool (idempotent). */
export async function installSchemas(sqlTool: string, o: Pick<ClusterOptions, 'databaseUrl' | 'databases' | 'log'>): Promise<void> {
  const pg = pgOf(o.databaseUrl);
  const dbs = o.databases ?? { main: 'temporal', visibility: 'temporal_visibility' };
  // the password goes through the environment (SQL_PASSWORD), never the command line
  const env = { ...process.env, SQL_PASSWORD: pg.password };
  const common = ['--plugin', 'postgres12', '--ep', pg.host, '-p', String(pg.port), '-u', pg.user];
  for (const [db, schema] of [
    [dbs.main, 'postgresql/v12/temporal'],
    [dbs.visibility, 'postgresql/v12/visibility'],
  ] as const) {
    for (const step of [['create-database'], ['setup-schema', '-v', '0.0'], ['update-schema', '--schema-name', schema]]) {
      const r = await run(sqlTool, [...common, '--db', db, ...step], env);
      if (r.code !== 0) throw new Error(`temporal-sql-tool ${step[0]} on ${db} failed (exit ${r.code}):\n${r.out.split('\n').slice(-6).join('\n')}`);
    }
    o.log(`${db}: schema ${schema} installed (temporal-sql-tool)`);
  }
}

function yamlString(s: string): string {
  return JSON.stringify(s); // a JSON string is a YAML double-quoted scalar
}

/** The server's configuration (YAML): PostgreSQL persistence and SQL visibility, all services on loopback. */
export function serverConfig(o: ClusterOptions): string {
  const pg = pgOf(o.databaseUrl);
  const dbs = o.databases ?? { main: 'temporal', visibility: 'temporal_visibility' };
  const p = o.ports;
  // each of the four services in the process has its own pools: at most 4 x (8 + 4) connections, and
  // fewer kept idle, so the cluster leaves room on a PostgreSQL shared with the app (max_connections 100)
  const store = (db: string, maxConns: number) => `      sql:
        pluginName: postgres12
        databaseName: ${yamlString(db)}
        connectAddr: ${yamlString(`${pg.host}:${pg.port}`)}
        connectProtocol: tcp
        user: ${yamlString(pg.user)}
        password: ${yamlString(pg.password)}
        maxConns: ${maxConns}
        maxIdleConns: ${Math.ceil(maxConns / 2)}
        maxConnLifetime: 1h`;
  const svc = (grpc: number, membership: number, http?: number) => `    rpc:
      grpcPort: ${grpc}
      membershipPort: ${membership}
      bindOnLocalHost: true${http ? `\n      httpPort: ${http}` : ''}`;
  return `# written by scripts/lib/temporalCluster.ts (npm run dev:cluster / test:cluster)
log:
  stdout: true
  level: warn
persistence:
  defaultStore: default
  visibilityStore: visibility
  numHistoryShards: ${o.numHistoryShards ?? 4}
  datastores:
    default:
${store(dbs.main, 8)}
    visibility:
${store(dbs.visibility, 4)}
global:
  membership:
    maxJoinDuration: 30s
    broadcastAddress: "127.0.0.1"
services:
  frontend:
${svc(p.frontend, p.membership[0], p.frontendHttp)}
  history:
${svc(p.history, p.membership[1])}
  matching:
${svc(p.matching, p.membership[2])}
  worker:
${svc(p.worker, p.membership[3])}
clusterMetadata:
  enableGlobalNamespace: false
  failoverVersionIncrement: 10
  masterClusterName: active
  currentClusterName: active
  clusterInformation:
    active:
      enabled: true
      initialFailoverVersion: 1
      rpcName: frontend
      rpcAddress: ${yamlString(`127.0.0.1:${p.frontend}`)}
dcRedirectionPolicy:
  policy: noop
dynamicConfigClient:
  filepath: ${yamlString(path.join(o.dir, 'config', 'dynamicconfig.yaml'))}
  pollInterval: 10s
`;
}

/** The server's dynamic configuration: what its own development-sql.yaml sets for SQL visibility. */
export const DYNAMIC_CONFIG = `# written by scripts/lib/temporalCluster.ts
limit.maxIDLength:
  - value: 255
    constraints: {}
`;

/** The Web UI server's configuration (ui-server config/development.yaml keys). */
export function uiConfig(o: ClusterOptions): string {
  const writes = o.uiWriteActions === true;
  return `# written by scripts/lib/temporalCluster.ts
temporalGrpcAddress: ${yamlString(`127.0.0.1:${o.ports.frontend}`)}
host: 127.0.0.1
port: ${o.ports.ui}
enableUi: true
defaultNamespace: default
refreshInterval: 0s
notifyOnNewVersion: false
# write actions (terminate, cancel, signal, update, reset, start, batch) off unless TEMPORAL_DISABLE_WRITE_ACTIONS=false
disableWriteActions: ${!writes}
cors:
  cookieInsecure: true
  allowOrigins:
    - ${yamlString(`http://localhost:${o.ports.ui}`)}
codec:
  endpoint: ${yamlString(o.codecEndpoint ?? '')}
  passAccessToken: false
  includeCredentials: false
forwardHeaders:
  - X-Forwarded-For
`;
}

/** Builds the binaries when needed, installs the schemas, writes the configuration files. */
export async function prepareTemporalCluster(o: ClusterOptions): Promise<PreparedCluster> {
  const binaries = await findOrBuildClusterBinaries(o.log);
  await installSchemas(binaries.sqlTool, o);
  fs.mkdirSync(path.join(o.dir, 'config'), { recursive: true });
  fs.writeFileSync(path.join(o.dir, 'config', 'development.yaml'), serverConfig(o), { mode: 0o600 }); // holds the database password
  fs.writeFileSync(path.join(o.dir, 'config', 'dynamicconfig.yaml'), DYNAMIC_CONFIG);
  if (o.ports.ui) {
    fs.mkdirSync(path.join(o.dir, 'ui'), { recursive: true });
    fs.writeFileSync(path.join(o.dir, 'ui', 'development.yaml'), uiConfig(o));
  }
  return { binaries, options: o, address: `127.0.0.1:${o.ports.frontend}`, uiUrl: o.ports.ui ? `http://localhost:${o.ports.ui}` : undefined };
}

/** The server's command line (all services in one process, on the configuration prepareTemporalCluster wrote). */
export function serverCommand(c: PreparedCluster): [string, string[]] {
  return [c.binaries.server, ['--root', c.options.dir, '--config', 'config', '--env', 'development', '--allow-no-auth', 'start']];
}

/** The Web UI server's command line. */
export function uiCommand(c: PreparedCluster): [string, string[]] {
  return [c.binaries.ui, ['--root', c.options.dir, '--config', 'ui', '--env', 'development', 'start']];
}

/** The Web UI answers HTTP. */
export async function uiServing(port: number): Promise<boolean> {
  return (await fetch(`http://127.0.0.1:${port}/`, { signal: AbortSignal.timeout(2_000) }).catch(() => null))?.ok === true;
}

/** Every port the server listens on (for checks that they are free, and that nothing is left). */
export function serverPorts(p: ClusterPorts): number[] {
  return [p.frontend, p.frontendHttp, p.history, p.matching, p.worker, ...p.membership];
}

/** The frontend answers and the system namespace is readable (persistence is up). */
export async function clusterServing(address: string): Promise<boolean> {
  const [host, port] = address.split(':');
  if (!(await isPortOpen(Number(port), host))) return false;
  let connection: Connection | undefined;
  try {
    connection = await Connection.connect({ address, connectTimeout: '2s' });
    await connection.workflowService.describeNamespace({ namespace: 'temporal-system' });
    return true;
  } catch {
    return false;
  } finally {
    await connection?.close().catch(() => undefined);
  }
}

/**
 * Starts the server process and resolves once it serves (no wall-clock deadline: progress decides);
 * a failed or interrupted start stops it. `output` receives its log lines.
 */
export async function startTemporalServer(c: PreparedCluster, o: { signal?: AbortSignal; log?: (line: string) => void; output?: (line: string) => void } = {}): Promise<ManagedChild> {
  const p = c.options.ports;
  for (const port of serverPorts(p)) {
    if (await isPortOpen(port)) throw new Error(`port ${port} (Temporal server) is already in use`);
  }
  const [bin, args] = serverCommand(c);
  const child = startChild('temporal-server', bin, args, { output: o.output ?? (() => {}) });
  try {
    await waitForReady(child, { what: 'the Temporal server', ready: () => clusterServing(c.address), signal: o.signal, log: o.log, pollMs: 500 });
  } catch (err) {
    await child.stop();
    throw err;
  }
  return child;
}

/** Starts the Web UI server; resolves once it answers HTTP. */
export async function startTemporalUi(c: PreparedCluster, o: { signal?: AbortSignal; log?: (line: string) => void; output?: (line: string) => void } = {}): Promise<ManagedChild> {
  const port = c.options.ports.ui;
  if (!port) throw new Error('no Web UI port');
  if (await isPortOpen(port)) throw new Error(`port ${port} (Temporal Web UI) is already in use`);
  const [bin, args] = uiCommand(c);
  const child = startChild('temporal-ui', bin, args, { output: o.output ?? (() => {}) });
  try {
    await waitForReady(child, {
      what: 'the Temporal Web UI server',
      ready: () => uiServing(port),
      signal: o.signal,
      log: o.log,
    });
  } catch (err) {
    await child.stop();
    throw err;
  }
  return child;
}
