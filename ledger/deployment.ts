/**
 * The ledger deployment the API and the worker act on: network, node, mirror, facilitator, the
 * service's accounts (operator, treasury, escrow, payTo), the passport token and the four topics.
 * Read from the JSON file at LOCALNET_CONFIG_PATH (written by the localnet bootstrap, or by the
 * same bootstrap run once against testnet/mainnet); HEDERA_* and FACILITATOR_URL override it.
 */
import fs from 'node:fs';
import type { Config } from '../config/index.js';
import type { HederaNetworkName, LedgerNode } from './client.js';

export interface LedgerDeployment {
  network: HederaNetworkName;
  node?: LedgerNode;
  mirrorUrl: string;
  facilitatorUrl?: string;
  /** The operator key is a secret: it stays in process memory, never in logs or workflow inputs. */
  operator: { accountId: string; privateKey: string };
  treasury: string;
  escrow: string;
  payTo: string;
  passportTokenId: string;
  topics: { directory: string; audit: string; a2a: string; marketplace: string };
  apiUrl?: string;
}

export class DeploymentError extends Error {}

export function loadLedgerDeployment(config: Config): LedgerDeployment {
  const path = config.LOCALNET_CONFIG_PATH;
  if (!fs.existsSync(path)) {
    throw new DeploymentError(`ledger deployment file ${path} not found (LOCALNET_CONFIG_PATH); start localnet (npm run dev) or run the bootstrap against ${config.HEDERA_NETWORK}`);
  }
  const file = JSON.parse(fs.readFileSync(path, 'utf8'));
  const operatorId = config.HEDERA_OPERATOR_ID ?? file.operator?.accountId;
  const operatorKey = config.HEDERA_OPERATOR_KEY ?? file.operator?.privateKey;
  const missing = [
    !operatorId && 'operator.accountId (or HEDERA_OPERATOR_ID)',
    !operatorKey && 'operator.privateKey (or HEDERA_OPERATOR_KEY)',
    !(config.HEDERA_MIRROR_URL ?? file.mirrorUrl) && 'mirrorUrl (or HEDERA_MIRROR_URL)',
    !file.passportTokenId && 'passportTokenId',
    !file.topics?.audit && 'topics',
  ].filter(Boolean);
  if (missing.length) throw new DeploymentError(`ledger deployment ${path} lacks: ${missing.join(', ')}`);
  return {
    network: (file.network ?? config.HEDERA_NETWORK) as HederaNetworkName,
    node: file.node,
    mirrorUrl: config.HEDERA_MIRROR_URL ?? file.mirrorUrl,
    facilitatorUrl: config.FACILITATOR_URL ?? file.facilitator?.url,
    operator: { accountId: operatorId, privateKey: operatorKey },
    treasury: file.treasury,
    escrow: file.escrow,
    payTo: file.payTo,
    passportTokenId: file.passportTokenId,
    topics: file.topics,
    apiUrl: file.apiUrl,
  };
}
