// startLocalnet: the embedded Hedera network (HAPI gRPC node, mirror REST subset, optional x402
// facilitator), its journal replay and first-start bootstrap, and the localnet.json it writes.
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PrivateKey } from '@hashgraph/sdk';
import { Engine } from './engine.js';
import { Journal } from './journal.js';
import { SnapshotStore } from './snapshot.js';
import { startGrpcServer } from './grpc-server.js';
import { startMirrorServer } from './mirror-rest.js';
import { bootstrap, type AgentAccount, type BootstrapInfo } from './bootstrap.js';
import type { LedgerDeployment } from '../ledger/deployment.js';
import type { FaultState } from './faults.js';

export interface LocalnetOptions {
  dataDir: string;
  grpcPort?: number; // default 50211; 0 picks a free port
  mirrorPort?: number; // default 5551; 0 picks a free port
  facilitatorPort?: number; // default 4020; 0 picks a free port
  host?: string; // default 127.0.0.1
  /** Where to write localnet.json; default <dataDir>/localnet.json. */
  localnetJsonPath?: string;
  /** Keys merged into localnet.json as given (apiUrl, adminToken, evm, ...). */
  extra?: Record<string, unknown>;
  /** Start the x402 facilitator when localnet/facilitator exists (default true). */
  facilitator?: boolean;
  /** Committed transactions between two state snapshots (default 1000). */
  snapshotEvery?: number;
  /** Log a line per started server (default false). */
  log?: (line: string) => void;
}

/**
 * The deployment file localnet writes (LOCALNET_CONFIG_PATH): the one deployment type,
 * LedgerDeployment (ledger/deployment.ts), with what only a localnet has (its facilitator, the
 * agents' accounts it funded, an admin token).
 */
export interface LocalnetConfig extends LedgerDeployment {
  network: 'local';
  node: { address: string; accountId: string };
  facilitator: { url: string; feePayer: string };
  evm?: unknown;
  accounts: AgentAccount[];
  adminToken?: string;
  [extra: string]: unknown;
}

export interface LocalnetFaults {
  /** The next n transactions answer BUSY at precheck. */
  busy(n: number): void;
  /** Every gRPC call fails with UNAVAILABLE for the given seconds. */
  unavailable(seconds: number): void;
  /** Transactions accepted during the next seconds reach consensus only afterwards (receipts UNKNOWN). */
  delayConsensus(seconds: number): void;
  /** For the given seconds the mirror REST shows nothing that reaches consensus from now on (mirror lag). */
  freezeMirror(seconds: number): void;
  reset(): void;
  state(): FaultState;
}

export interface Localnet {
  grpcAddress: string;
  mirrorUrl: string; // ends with /api/v1
  mirrorBaseUrl: string; // without /api/v1; the /__control endpoint lives here
  facilitatorUrl: string | null; // null when no facilitator module is present
  config: LocalnetConfig;
  faults: LocalnetFaults;
  /** Internal: the node itself, for in-process assertions. */
  engine: Engine;
  stop(): Promise<void>;
}

interface StateFile {
  version: 1;
  genesisKey: string; // DER hex of 0.0.2's key
  bootstrap?: BootstrapInfo;
}

interface FacilitatorModule {
  createFacilitatorServer(opts: {
    host: string;
    port: number;
    node: { address: string; accountId: string };
    mirrorUrl: string;
    feePayer: { accountId: string; privateKey: string };
    dataDir: string;
  }): Promise<{ url: string; stop(): Promise<void> }> | { url: string; stop(): Promise<void> };
}

/** Loaded by a computed specifier so localnet builds and runs before the facilitator exists. */
async function loadFacilitator(): Promise<FacilitatorModule | null> {
  const dir = fileURLToPath(new URL('./facilitator/', import.meta.url));
  if (!existsSync(join(dir, 'index.ts')) && !existsSync(join(dir, 'index.js'))) return null;
  const spec = './facilitator/index.js';
  const mod = (await import(spec)) as Partial<FacilitatorModule>;
  return typeof mod.createFacilitatorServer === 'function' ? (mod as FacilitatorModule) : null;
}

export async function startLocalnet(opts: LocalnetOptions): Promise<Localnet> {
  const host = opts.host ?? '127.0.0.1';
  const dataDir = resolve(opts.dataDir);
  mkdirSync(dataDir, { recursive: true });
  const statePath = join(dataDir, 'localnet-state.json');
  const log = opts.log ?? (() => {});

  let stateFile: StateFile;
  if (existsSync(statePath)) stateFile = JSON.parse(readFileSync(statePath, 'utf8')) as StateFile;
  else {
    stateFile = { version: 1, genesisKey: PrivateKey.generateED25519().toStringDer() };
    writeFileSync(statePath, JSON.stringify(stateFile, null, 2), { mode: 0o600 });
  }
  const genesisKey = PrivateKey.fromStringDer(stateFile.genesisKey);

  const journal = new Journal(dataDir);
  const engine = new Engine(journal, { ed25519: genesisKey.publicKey.toBytesRaw() }, new SnapshotStore(dataDir), opts.snapshotEvery);
  const replayed = engine.replay();
  if (replayed === 0) {
    stateFile.bootstrap = await bootstrap(engine, genesisKey);
    writeFileSync(statePath, JSON.stringify(stateFile, null, 2), { mode: 0o600 });
  } else if (!stateFile.bootstrap) {
    throw new Error(`localnet: ${dataDir} has a journal but no bootstrap record; delete the directory to start over`);
  }
  const boot = stateFile.bootstrap!;

  const grpc = await startGrpcServer(engine, host, opts.grpcPort ?? 50211);
  let mirror;
  try {
    mirror = await startMirrorServer(engine, host, opts.mirrorPort ?? 5551);
  } catch (e) {
    await grpc.stop();
    throw e;
  }
  const mirrorUrl = `${mirror.url}/api/v1`;
  log(`localnet HAPI gRPC ${grpc.address} (node 0.0.3), mirror REST ${mirrorUrl}, ${replayed} transactions (${engine.lastReplay.fromSnapshot ? 'snapshot + ' : ''}${engine.lastReplay.replayed} replayed)`);

  let facilitator: { url: string; stop(): Promise<void> } | null = null;
  if (opts.facilitator !== false) {
    const mod = await loadFacilitator();
    if (mod) {
      facilitator = await mod.createFacilitatorServer({
        host,
        port: opts.facilitatorPort ?? 4020,
        node: { address: grpc.address, accountId: '0.0.3' },
        mirrorUrl,
        feePayer: boot.feePayer,
        dataDir: join(dataDir, 'facilitator'),
      });
      log(`localnet x402 facilitator ${facilitator.url}`);
    }
  }

  const config: LocalnetConfig = {
    network: 'local',
    node: { address: grpc.address, accountId: '0.0.3' },
    mirrorUrl,
    ...(opts.extra ?? {}),
    facilitator: { url: facilitator?.url ?? '', feePayer: boot.feePayer.accountId },
    operator: boot.operator,
    treasury: boot.treasury,
    escrow: boot.escrow,
    // a state file from before the escrow had a key of its own: its account is keyed by the operator
    escrowPrivateKey: boot.escrowKey ?? boot.operator.privateKey,
    payTo: boot.payTo,
    passportTokenId: boot.passportTokenId,
    topics: boot.topics,
    accounts: boot.accounts,
  };
  const jsonPath = opts.localnetJsonPath ?? join(dataDir, 'localnet.json');
  mkdirSync(dirname(jsonPath), { recursive: true });
  // Keys other tools merged into the file (the dev launcher's apiUrl, adminToken, evm) survive a
  // restart of localnet alone (a crash the launcher restarts it after); localnet's own keys are rewritten.
  writeFileSync(jsonPath, JSON.stringify({ ...readJsonObject(jsonPath), ...config }, null, 2) + '\n', { mode: 0o600 });

  const f = engine.faults;
  let stopped = false;
  return {
    grpcAddress: grpc.address,
    mirrorUrl,
    mirrorBaseUrl: mirror.url,
    facilitatorUrl: facilitator?.url ?? null,
    config,
    engine,
    faults: {
      busy: (n) => f.busy(n),
      unavailable: (s) => f.unavailable(s),
      delayConsensus: (s) => f.delayConsensus(s),
      freezeMirror: (s) => f.freezeMirror(s, engine.state.lastConsensusNs),
      reset: () => f.reset(),
      state: () => f.snapshot(),
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      await facilitator?.stop();
      await Promise.all([grpc.stop(), mirror.stop()]);
      engine.stop();
    },
  };
}

/** The JSON object in a file; {} when there is none or it is not an object. */
function readJsonObject(path: string): Record<string, unknown> {
  try {
    const v = JSON.parse(readFileSync(path, 'utf8')) as unknown;
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {};
  } catch {
    return {};
  }
}

export type { AgentAccount, BootstrapInfo };
