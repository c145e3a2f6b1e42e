/**
 * A localnet (with its x402 facilitator) on free ports in a temp dir, and the ledger contexts the
 * API and the worker build from its localnet.json, for integration and e2e tests: `ledger` is the
 * API's, built as api/server.ts builds it (no key: issue 26 item 9), `clients` the worker's (the
 * operator's client, for the activities and for tests acting as the service).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { startLocalnet, type Localnet } from '../../localnet/index.js';
import { loadLedgerDeployment, type LedgerDeployment } from '../../ledger/deployment.js';
import { ledgerClients, type LedgerClients } from '../../ledger/services.js';
import { apiLedgerContext, type LedgerContext } from '../../api/context.js';
import { testConfig } from './app.js';
import { keepLocalnetData, recordSecret } from './secrets.js';

export interface LedgerStack {
  localnet: Localnet;
  deployment: LedgerDeployment;
  /** Environment overrides that point config at this localnet. */
  env: Record<string, string>;
  /** the API's ledger context: no operator, no key */
  ledger: LedgerContext;
  /** the worker's clients: the operator's SDK client (createLedgerServices(stack.clients, ...)) */
  clients: LedgerClients;
  stop(): Promise<void>;
}

export async function startLedgerStack(prefix = 'stack'): Promise<LedgerStack> {
  const dir = mkdtempSync(join(tmpdir(), `${prefix}-`));
  const localnetJsonPath = join(dir, 'localnet.json');
  const localnet = await startLocalnet({ dataDir: join(dir, 'localnet'), grpcPort: 0, mirrorPort: 0, facilitatorPort: 0, localnetJsonPath });
  // every private key of this localnet is a secret the secrets scan looks for (test/reliability/secretsScan.ts)
  recordSecret('localnet operator key', localnet.config.operator.privateKey);
  recordSecret('localnet escrow key', localnet.config.escrowPrivateKey);
  for (const a of localnet.config.accounts) recordSecret(`localnet account ${a.accountId} key`, a.privateKey);
  const env = { LOCALNET_CONFIG_PATH: localnetJsonPath, HEDERA_NETWORK: 'local' };
  const deployment = loadLedgerDeployment(testConfig(env));
  const clients = ledgerClients(deployment);
  const ledger = apiLedgerContext(testConfig(env), { keyCacheTtlMs: 1_000 });
  return {
    localnet,
    deployment,
    env,
    ledger,
    clients,
    async stop() {
      clients.client.close();
      ledger.client.close();
      await localnet.stop();
      keepLocalnetData(join(dir, 'localnet'), basename(dir)); // its journal, for the secrets scan
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
