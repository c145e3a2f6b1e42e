/**
 * The stages `npm run dev` and `npm run dev:cluster` share (scripts/lib/launcher.ts runs them):
 * PostgreSQL, localnet, the local EVM node, .data/localnet.json, workers and API instances. Each
 * registers what it starts before it waits for it, and waits without a wall-clock deadline.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { ensureDatabase, migrate } from '../../db/migrate.js';
import { resolvePostgres } from './postgres.js';
import { startChild, superviseChild, waitForReady, type ManagedChild, type SupervisedChild } from './children.js';
import { assertPortFree, type Stage, type StageContext, type StageResult } from './launcher.js';
import { isPortOpen } from './ports.js';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');

export const prefixed = (name: string) => (line: string) => console.log(`[${name}] ${line}`);

export interface DevSecrets {
  adminToken: string;
  payloadCodecKey: string;
  trustSigningKey: string;
  trustSigningKeyId: string;
  oauthSigningKey: string;
  oauthSigningKeyId: string;
}

/** Local-only secrets kept in <dataDir>/dev-secrets.json so restarts keep them (never used in production). */
export function devSecrets(dataDir: string): DevSecrets {
  const file = path.join(dataDir, 'dev-secrets.json');
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
    fs.mkdirSync(dataDir, { recursive: true });
    fs.writeFileSync(file, JSON.stringify(secrets, null, 2), { mode: 0o600 });
  }
  return secrets;
}

/** The environment every process of `npm run dev` shares (secrets from devSecrets); development, which only the launcher and the tests set. */
export function devEnv(secrets: DevSecrets): Record<string, string> {
  return {
    ADMIN_TOKEN_SHA256: createHash('sha256').update(secrets.adminToken).digest('hex'),
    PAYLOAD_CODEC_KEY: secrets.payloadCodecKey,
    TRUST_SIGNING_KEY: secrets.trustSigningKey,
    TRUST_SIGNING_KEY_ID: secrets.trustSigningKeyId,
    OAUTH_SIGNING_KEY: secrets.oauthSigningKey,
    OAUTH_SIGNING_KEY_ID: secrets.oauthSigningKeyId,
    NODE_ENV: 'development',
    // directory liveness probed every minute, so a local agent that stops shows offline within minutes (unless set)
    DIRECTORY_PROBE_EVERY_S: process.env.DIRECTORY_PROBE_EVERY_S ?? '60',
  };
}

/**
 * The ledger variables a production process refuses to start without (config PRODUCTION_REQUIRED),
 * read from a localnet.json: the operator, the mirror and the facilitator for every process (`all`);
 * the escrow account's key for the workers only (`worker`: it signs escrow payouts and refunds).
 * `npm run dev:cluster` and the cluster tests run their processes as production with these.
 */
export function productionLedgerEnv(localnetJson: string): { all: Record<string, string>; worker: Record<string, string> } {
  const file = JSON.parse(fs.readFileSync(localnetJson, 'utf8')) as { operator: { accountId: string; privateKey: string }; mirrorUrl: string; facilitator?: { url?: string }; escrowPrivateKey?: string };
  return {
    all: {
      HEDERA_OPERATOR_ID: file.operator.accountId,
      HEDERA_OPERATOR_KEY: file.operator.privateKey,
      HEDERA_MIRROR_URL: file.mirrorUrl,
      ...(file.facilitator?.url ? { FACILITATOR_URL: file.facilitator.url } : {}),
    },
    worker: file.escrowPrivateKey ? { ESCROW_PRIVATE_KEY: file.escrowPrivateKey } : {},
  };
}

/** A stage's own variables: fixed, or made from what the earlier stages exported (e.g. a file they wrote). */
export type StageEnv = Record<string, string> | ((env: Record<string, string>) => Record<string, string>);
const stageEnv = (own: StageEnv | undefined, env: Record<string, string>) => (typeof own === 'function' ? own(env) : (own ?? {}));

function tsxChild(name: string, entry: string, env: Record<string, string>, output: (line: string) => void): ManagedChild {
  return startChild(name, process.execPath, ['--import', 'tsx', path.resolve(root, entry)], { cwd: root, env: { ...process.env, ...env }, output });
}

/**
 * A TypeScript entry kept running the way a process manager does (restarted when it dies: a crash, a
 * kill -9), registered for stopping at once. Resolves once the first process is ready; fails when it
 * exits first or stops making progress.
 */
export async function supervisedTsx(
  ctx: StageContext,
  o: { name: string; entry: string; env: Record<string, string>; ready: (seen: (text: string) => boolean) => Promise<boolean> | boolean; what: string },
): Promise<SupervisedChild> {
  let lines: string[] = [];
  const seen = (text: string) => lines.some((l) => l.includes(text));
  const out = prefixed(o.name);
  const supervised = superviseChild(
    () => {
      lines = [];
      return tsxChild(o.name, o.entry, o.env, (line) => {
        if (lines.length < 2_000) lines.push(line);
        out(line);
      });
    },
    prefixed('supervisor'),
  );
  ctx.onStop(o.name, () => supervised.stop());
  await waitForReady(supervised.current, { what: o.what, ready: () => o.ready(seen), signal: ctx.signal, log: ctx.log });
  lines = []; // only start-up output is kept for the readiness check
  return supervised;
}

export function postgresStage(o: { dataDir: string; databaseUrl?: string; database?: string }): Stage {
  return {
    name: 'postgres',
    async start(_env, ctx) {
      const pg = await resolvePostgres({ databaseUrl: o.databaseUrl, dataDir: path.join(o.dataDir, 'postgres'), database: o.database, log: ctx.log });
      ctx.onStop('postgres', pg.stop);
      await ensureDatabase(pg.url);
      const applied = await migrate(pg.url);
      ctx.log(`${pg.source}; migrations ${applied.length ? `applied: ${applied.join(', ')}` : 'up to date'}`);
      return { env: { DATABASE_URL: pg.url }, urls: { PostgreSQL: pg.url.replace(/:[^:@/]*@/, ':***@') } };
    },
  };
}

export function localnetStage(o: { dataDir: string }): Stage {
  return {
    name: 'localnet',
    async start(env, ctx) {
      const grpcPort = process.env.LOCALNET_GRPC_PORT ?? '50211';
      const mirrorPort = process.env.LOCALNET_MIRROR_PORT ?? '5551';
      const facilitatorPort = process.env.FACILITATOR_PORT ?? '4020';
      await assertPortFree(Number(grpcPort), 'localnet HAPI gRPC', 'LOCALNET_GRPC_PORT');
      await assertPortFree(Number(mirrorPort), 'localnet mirror REST', 'LOCALNET_MIRROR_PORT');
      await assertPortFree(Number(facilitatorPort), 'x402 facilitator', 'FACILITATOR_PORT');
      await supervisedTsx(ctx, {
        name: 'localnet',
        what: 'localnet',
        entry: 'localnet/main.ts',
        env: {
          ...env,
          LOCALNET_DATA_DIR: path.join(o.dataDir, 'localnet'),
          LOCALNET_JSON: path.join(o.dataDir, 'localnet.json'),
          LOCALNET_GRPC_PORT: grpcPort,
          LOCALNET_MIRROR_PORT: mirrorPort,
          FACILITATOR_PORT: facilitatorPort,
        },
        ready: () => isPortOpen(Number(mirrorPort)),
      });
      return {
        env: { LOCALNET_CONFIG_PATH: path.join(o.dataDir, 'localnet.json'), HEDERA_NETWORK: 'local', FACILITATOR_URL: `http://127.0.0.1:${facilitatorPort}` },
        urls: {
          'Localnet HAPI gRPC': `127.0.0.1:${grpcPort}`,
          'Localnet mirror REST': `http://127.0.0.1:${mirrorPort}/api/v1`,
          'x402 facilitator': `http://127.0.0.1:${facilitatorPort}`,
          'Agent accounts and keys': path.join(o.dataDir, 'localnet.json'),
        },
      };
    },
  };
}

let evmInfo: Record<string, unknown> | undefined;

export function evmStage(o: { dataDir: string; externalRpcUrl?: string; port?: number }): Stage {
  return {
    name: 'evm',
    async start(_env, ctx): Promise<StageResult> {
      if (o.externalRpcUrl) return { urls: { 'EVM RPC': `${o.externalRpcUrl} (external)` } };
      const port = o.port ?? 8545;
      await assertPortFree(port, 'local EVM node', 'EVM_PORT');
      const { startDevEvm } = await import('../../evm/devNode.js');
      const node = await startDevEvm({ dataDir: o.dataDir, port, log: ctx.log }); // stops its anvil itself when it fails
      ctx.onStop('evm', node.stop);
      evmInfo = { rpcUrl: node.rpcUrl, chainId: node.chainId, contracts: node.contracts, accounts: node.accounts.slice(0, 5) };
      return { env: node.env, urls: { 'EVM RPC (anvil)': node.rpcUrl } };
    },
  };
}

/**
 * <dataDir>/localnet.json is the one file a developer reads to act as an agent (DESIGN.md section 4):
 * add what only the launcher knows (API URL, local admin token, EVM node).
 */
export function localnetJsonStage(o: { dataDir: string; apiUrl: string; adminToken: string }): Stage {
  return {
    name: 'localnet.json',
    async start() {
      const file = path.join(o.dataDir, 'localnet.json');
      if (!fs.existsSync(file)) return {};
      const current = JSON.parse(fs.readFileSync(file, 'utf8'));
      const merged = { ...current, apiUrl: o.apiUrl, adminToken: o.adminToken, ...(evmInfo ? { evm: evmInfo } : {}) };
      fs.writeFileSync(file, JSON.stringify(merged, null, 2), { mode: 0o600 });
      return {};
    },
  };
}

/** A worker process (worker/index.ts), ready once it polls its task queue. */
export function workerStage(o: { name?: string; env?: StageEnv } = {}): Stage {
  const name = o.name ?? 'worker';
  return {
    name,
    async start(env, ctx) {
      await supervisedTsx(ctx, { name, what: `the ${name}`, entry: 'worker/index.ts', env: { ...env, ...stageEnv(o.env, env) }, ready: (seen) => seen('worker polling task queue') });
      return {};
    },
  };
}

/** An API process (api/server.ts) on `port`, ready once GET /health answers 200. */
export function apiStage(o: { name?: string; port: number; env?: StageEnv; urls?: (base: string) => Record<string, string> }): Stage {
  const name = o.name ?? 'api';
  return {
    name,
    async start(env, ctx) {
      await assertPortFree(o.port, name === 'api' ? 'API' : name, name === 'api' ? 'PORT' : undefined);
      const base = `http://127.0.0.1:${o.port}`;
      // our API's answer, not just any 200 on that port
      const health = async () => {
        const r = await fetch(`${base}/health`, { signal: AbortSignal.timeout(2_000) }).catch(() => null);
        return r?.status === 200 && ((await r.json().catch(() => ({}))) as { status?: string }).status === 'ok';
      };
      // keys per role (issue 26 item 9): the API never gets a ledger key, whatever the shell or .env holds (empty = unset)
      const noKeys = { HEDERA_OPERATOR_KEY: '', ESCROW_PRIVATE_KEY: '' };
      await supervisedTsx(ctx, { name, what: `the ${name === 'api' ? 'API' : name}`, entry: 'api/server.ts', env: { ...env, PORT: String(o.port), ...stageEnv(o.env, env), ...noKeys }, ready: health });
      return { urls: o.urls?.(base) ?? {} };
    },
  };
}
