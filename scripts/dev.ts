/**
 * npm run dev: the whole stack on embedded defaults, in dependency order, each stage printing
 * where it listens: PostgreSQL, the Temporal dev server (Web UI :8233), localnet (HAPI gRPC,
 * mirror REST, x402 facilitator), the local EVM node, migrations, the worker, the API. State lives
 * in .data/ so a second run keeps the first run's data. localnet, the worker and the API are
 * restarted when they die. Ctrl-C stops exactly what was started.
 *
 * To add a component, add a Stage to STAGES: it receives what earlier stages exported (env and
 * URLs) and returns its own plus a stop function.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes, createHash, generateKeyPairSync } from 'node:crypto';
import { loadConfig } from '../config/index.js';
import { ensureDatabase, migrate } from '../db/migrate.js';
import { resolvePostgres } from './lib/postgres.js';
import { devLauncherTemporalOptions, startTemporalDevServer } from './lib/temporalServer.js';
import { killAllChildren, startChild, superviseChild, type ManagedChild, type SupervisedChild } from './lib/children.js';
import { waitForPort } from './lib/ports.js';

// A local .env (see .env.example) is read when present; the real environment wins.
if (fs.existsSync('.env')) process.loadEnvFile('.env');

const DATA = path.resolve('.data');
const config = loadConfig();

interface StageResult {
  urls?: Record<string, string>;
  env?: Record<string, string>;
  stop?: () => Promise<void>;
}
interface Stage {
  name: string;
  start(env: Record<string, string>): Promise<StageResult>;
}

let evmInfo: Record<string, unknown> | undefined;

const log = (name: string) => (line: string) => console.log(`[${name}] ${line}`);

/** Local-only secrets kept in .data/dev-secrets.json so restarts keep them (never used in production). */
function devSecrets(): { adminToken: string; payloadCodecKey: string; trustSigningKey: string; trustSigningKeyId: string; oauthSigningKey: string; oauthSigningKeyId: string } {
  const file = path.join(DATA, 'dev-secrets.json');
  const existing = fs.existsSync(file) ? JSON.parse(fs.readFileSync(file, 'utf8')) : {};
  // Secrets added later (the trust snapshot key) are generated into an existing file too.
  const secrets = {
    adminToken: randomBytes(24).toString('base64url'),
    payloadCodecKey: randomBytes(32).toString('hex'),
    trustSigningKey: generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('hex'),
    trustSigningKeyId: `dev-trust-${randomBytes(4).toString('hex')}`,
    oauthSigningKey: generateKeyPairSync('ed25519').privateKey.export({ format: 'der', type: 'pkcs8' }).toString('hex'),
    oauthSigningKeyId: `dev-oauth-${randomBytes(4).toString('hex')}`,
    ...existing,
  };
  if (Object.keys(secrets).length !== Object.keys(existing).length) {
    fs.mkdirSync(DATA, { recursive: true });
    fs.writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets;
}

function tsxChild(name: string, entry: string, env: Record<string, string>): ManagedChild {
  return startChild(name, process.execPath, ['--import', 'tsx', entry], { env: { ...process.env, ...env }, output: log(name) });
}

/** localnet, the worker and the API are restarted when they die (a crash, a kill -9), as in production. */
function supervisedTsxChild(name: string, entry: string, env: Record<string, string>): SupervisedChild {
  return superviseChild(() => tsxChild(name, entry, env), log('dev'));
}

const STAGES: Stage[] = [
  {
    name: 'postgres',
    async start(): Promise<StageResult> {
      const pg = await resolvePostgres({ databaseUrl: config.DATABASE_URL, dataDir: path.join(DATA, 'postgres'), log: log('postgres') });
      await ensureDatabase(pg.url);
      const applied = await migrate(pg.url);
      log('postgres')(`${pg.source}; migrations ${applied.length ? `applied: ${applied.join(', ')}` : 'up to date'}`);
      return { env: { DATABASE_URL: pg.url }, urls: { PostgreSQL: pg.url.replace(/:[^:@/]*@/, ':***@') }, stop: pg.stop };
    },
  },
  {
    name: 'temporal',
    async start(): Promise<StageResult> {
      if (config.TEMPORAL_ADDRESS) return { env: { TEMPORAL_ADDRESS: config.TEMPORAL_ADDRESS }, urls: { Temporal: `${config.TEMPORAL_ADDRESS} (external)` } };
      const server = await startTemporalDevServer({
        ...devLauncherTemporalOptions({ apiPort: config.PORT, temporalPort: process.env.TEMPORAL_PORT, uiPort: process.env.TEMPORAL_UI_PORT, dataDir: DATA }),
        log: log('temporal'),
      });
      return { env: { TEMPORAL_ADDRESS: server.address }, urls: { 'Temporal frontend': server.address, 'Temporal Web UI': server.uiUrl! }, stop: server.stop };
    },
  },
  {
    name: 'localnet',
    async start(env) {
      const entry = path.resolve('localnet/main.ts');
      if (!fs.existsSync(entry)) return {};
      const grpcPort = process.env.LOCALNET_GRPC_PORT ?? '50211';
      const mirrorPort = process.env.LOCALNET_MIRROR_PORT ?? '5551';
      const facilitatorPort = process.env.FACILITATOR_PORT ?? '4020';
      const child = supervisedTsxChild('localnet', entry, {
        ...env,
        LOCALNET_DATA_DIR: path.join(DATA, 'localnet'),
        LOCALNET_JSON: path.join(DATA, 'localnet.json'),
        LOCALNET_GRPC_PORT: grpcPort,
        LOCALNET_MIRROR_PORT: mirrorPort,
        FACILITATOR_PORT: facilitatorPort,
      });
      await waitForPort(Number(mirrorPort), { timeoutMs: 120_000, what: 'localnet mirror REST' });
      return {
        env: { LOCALNET_CONFIG_PATH: path.join(DATA, 'localnet.json'), HEDERA_NETWORK: 'local', FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}` },
        urls: { 'Localnet HAPI gRPC': `127.0.0.1:${grpcPort}`, 'Localnet mirror REST': `http://127.0.0.1:${mirrorPort}/api/v1`, 'x402 facilitator': `http://127.0.0.1:${facilitatorPort}`, 'Agent accounts and keys': path.join(DATA, 'localnet.json') },
        stop: () => child.stop(),
      };
    },
  },
  {
    name: 'evm',
    async start(): Promise<StageResult> {
      if (config.EVM_RPC_URL) return { urls: { 'EVM RPC': `${config.EVM_RPC_URL} (external)` } };
      const evmEntry = path.resolve('evm/devNode.ts');
      if (!fs.existsSync(evmEntry)) return {};
      const { startDevEvm } = await import(evmEntry);
      const node = await startDevEvm({ dataDir: DATA, log: log('evm') });
      evmInfo = { rpcUrl: node.rpcUrl, chainId: node.chainId, contracts: node.contracts, accounts: node.accounts.slice(0, 5) };
      return { env: node.env, urls: { 'EVM RPC (anvil)': node.rpcUrl }, stop: node.stop };
    },
  },
  {
    // .data/localnet.json is the one file a developer reads to act as an agent (DESIGN.md
    // section 4): add what only the launcher knows (API URL, local admin token, EVM node).
    name: 'localnet.json',
    async start() {
      const file = path.join(DATA, 'localnet.json');
      if (!fs.existsSync(file)) return {};
      const current = JSON.parse(fs.readFileSync(file, 'utf8'));
      const merged = { ...current, apiUrl: `http://127.0.0.1:${config.PORT}`, adminToken: devSecrets().adminToken, ...(evmInfo ? { evm: evmInfo } : {}) };
      fs.writeFileSync(file, JSON.stringify(merged, null, 2), { mode: 0o600 });
      return {};
    },
  },
  {
    name: 'worker',
    async start(env) {
      const child = supervisedTsxChild('worker', 'worker/index.ts', env);
      return { stop: () => child.stop() };
    },
  },
  {
    name: 'api',
    async start(env) {
      const child = supervisedTsxChild('api', 'api/server.ts', env);
      await Promise.race([
        waitForPort(config.PORT, { timeoutMs: 60_000, what: 'API' }),
        child.current.exited.then((code) => {
          throw new Error(`API exited with code ${code}`);
        }),
      ]);
      return { urls: { API: `http://localhost:${config.PORT}`, 'API reference': `http://localhost:${config.PORT}/docs`, OpenAPI: `http://localhost:${config.PORT}/openapi.json` }, stop: () => child.stop() };
    },
  },
];

const started: Array<{ name: string; stop?: () => Promise<void> }> = [];
let signals = 0;

async function stopAll(code: number): Promise<never> {
  // Ctrl-C reaches npm, tsx and this process at once, so one keypress can arrive twice: only a
  // third signal means "now", and even then every child we started is killed, none left behind.
  signals++;
  if (signals === 3) {
    console.log('\nforce stop: killing every child process');
    killAllChildren();
    process.exit(code);
  }
  if (signals > 1) {
    console.log('\nstill stopping (press Ctrl-C again to force)...');
    return new Promise<never>(() => {});
  }
  console.log('\nstopping...');
  for (const stage of started.reverse()) {
    try {
      await stage.stop?.();
      console.log(`  stopped ${stage.name}`);
    } catch (err) {
      console.error(`  ${stage.name}: ${(err as Error).message}`);
    }
  }
  process.exit(code);
}
process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

try {
  const secrets = devSecrets();
  const env: Record<string, string> = {
    ADMIN_TOKEN_SHA256: createHash('sha256').update(secrets.adminToken).digest('hex'),
    PAYLOAD_CODEC_KEY: secrets.payloadCodecKey,
    TRUST_SIGNING_KEY: secrets.trustSigningKey,
    TRUST_SIGNING_KEY_ID: secrets.trustSigningKeyId,
    OAUTH_SIGNING_KEY: secrets.oauthSigningKey,
    OAUTH_SIGNING_KEY_ID: secrets.oauthSigningKeyId,
    NODE_ENV: 'development',
  };
  const urls: Record<string, string> = {};
  for (const stage of STAGES) {
    const result = await stage.start(env);
    started.push({ name: stage.name, stop: result.stop });
    Object.assign(env, result.env);
    Object.assign(urls, result.urls);
  }
  const width = Math.max(...Object.keys(urls).map((k) => k.length));
  console.log('\nAgent passport stack is up:');
  for (const [name, url] of Object.entries(urls)) console.log(`  ${name.padEnd(width)}  ${url}`);
  console.log(`  ${'Admin token'.padEnd(width)}  in ${path.join(DATA, 'dev-secrets.json')}`);
  console.log('\nCtrl-C stops everything.');
} catch (err) {
  console.error(`start-up failed: ${(err as Error).message}`);
  await stopAll(1);
}
