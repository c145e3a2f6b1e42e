/**
 * The ledger deployment the API and the worker act on: network, node, mirror, facilitator, the
 * service's accounts (operator, treasury, escrow, payTo), the passport token and the four topics.
 * Read from the JSON file at LOCALNET_CONFIG_PATH (written by the localnet bootstrap, or by the
 * same bootstrap run once against testnet/mainnet); HEDERA_*, ESCROW_* and FACILITATOR_URL override it.
 *
 * The escrow account (issue 19 item 3) holds only escrowed task money and has its own key, which
 * signs the payouts and refunds: ESCROW_ACCOUNT_ID / ESCROW_PRIVATE_KEY, else the file's `escrow` and
 * `escrowPrivateKey`. A deployment from before (escrow = an account of the operator's key, or the
 * operator itself) keeps working with the operator key; outside development the escrow must be an
 * account of its own (not the operator, treasury or payTo).
 */
import fs from 'node:fs';
import type { Config } from '../config/index.js';
import type { HederaNetworkName, LedgerNode } from './client.js';
import { parsePrivateKey, publicKeyFromMirror } from '@agent-passport/core/keys';
import type { MirrorClient } from './mirror.js';

export interface LedgerDeployment {
  network: HederaNetworkName;
  node?: LedgerNode;
  mirrorUrl: string;
  facilitatorUrl?: string;
  /** The operator key is a secret: it stays in process memory, never in logs or workflow inputs. */
  operator: { accountId: string; privateKey: string };
  treasury: string;
  escrow: string;
  /** The escrow account's key: a secret like the operator's (memory only; signs escrow payouts and refunds). */
  escrowPrivateKey: string;
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
  const fileEscrow: unknown = file.escrow;
  const escrow = config.ESCROW_ACCOUNT_ID ?? (typeof fileEscrow === 'string' ? fileEscrow : (fileEscrow as { accountId?: string } | undefined)?.accountId) ?? operatorId;
  const escrowPrivateKey =
    config.ESCROW_PRIVATE_KEY ?? file.escrowPrivateKey ?? (fileEscrow as { privateKey?: string } | undefined)?.privateKey ?? (config.ESCROW_ACCOUNT_ID ? undefined : operatorKey);
  if (!escrowPrivateKey) throw new DeploymentError(`ESCROW_ACCOUNT_ID ${escrow} is set without ESCROW_PRIVATE_KEY: the escrow account's key signs its payouts and refunds`);
  if (config.NODE_ENV === 'production' && [operatorId, file.treasury, file.payTo].includes(escrow)) {
    throw new DeploymentError(`the escrow account ${escrow} is also the operator, treasury or payTo account: escrowed money must sit in an account of its own (ESCROW_ACCOUNT_ID / ESCROW_PRIVATE_KEY; npm run bootstrap:network creates one)`);
  }
  return {
    network: (file.network ?? config.HEDERA_NETWORK) as HederaNetworkName,
    node: file.node,
    mirrorUrl: config.HEDERA_MIRROR_URL ?? file.mirrorUrl,
    facilitatorUrl: config.FACILITATOR_URL ?? file.facilitator?.url,
    operator: { accountId: operatorId, privateKey: operatorKey },
    treasury: file.treasury,
    escrow,
    escrowPrivateKey,
    payTo: file.payTo,
    passportTokenId: file.passportTokenId,
    topics: file.topics,
    apiUrl: file.apiUrl,
  };
}

/**
 * Why the escrow key cannot sign for the escrow account (its key on the ledger is another), or null
 * when it can or the mirror cannot tell (a key list, an unknown account: the first payout would say).
 * The worker checks it at start-up, so a wrong ESCROW_PRIVATE_KEY stops it before a task is stuck
 * with a payout the ledger refuses.
 */
export async function escrowKeyProblem(mirror: MirrorClient, deployment: Pick<LedgerDeployment, 'escrow' | 'escrowPrivateKey'>): Promise<string | null> {
  const account = await mirror.getAccount(deployment.escrow);
  const onLedger = publicKeyFromMirror(account?.key ?? null);
  if (!onLedger) return null;
  const ours = parsePrivateKey(deployment.escrowPrivateKey).publicKey;
  return onLedger.toStringRaw() === ours.toStringRaw() ? null : `the escrow key (ESCROW_PRIVATE_KEY or the deployment's escrowPrivateKey) is not the key of the escrow account ${deployment.escrow}`;
}
