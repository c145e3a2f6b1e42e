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
 *
 * Two loaders (issue 26 item 9): loadPublicLedgerDeployment, the ids and URLs without any key, is what
 * the API loads (it signs nothing for the service; keys in the file or the environment are never read);
 * loadLedgerDeployment adds the operator and escrow keys, for the worker, which signs every ledger write.
 */
import fs from 'node:fs';
import type { Config } from '../config/index.js';
import type { HederaNetworkName, LedgerNode } from './client.js';
import { parsePrivateKey, publicKeyFromMirror } from '@agent-passport/core/keys';
import type { MirrorClient } from './mirror.js';

/** The deployment as every process may know it: ids and URLs, no key (what the API holds). */
export interface PublicLedgerDeployment {
  network: HederaNetworkName;
  node?: LedgerNode;
  mirrorUrl: string;
  facilitatorUrl?: string;
  operator: { accountId: string };
  /** holds the passport NFTs before delivery and receives the marketplace fees */
  treasury: string;
  escrow: string;
  /** receives the x402 payments (and refunds them) */
  payTo: string;
  passportTokenId: string;
  topics: { directory: string; audit: string; a2a: string; marketplace: string };
  apiUrl?: string;
}

/** The deployment with the keys that sign for it: the worker's. */
export interface LedgerDeployment extends PublicLedgerDeployment {
  /** The operator key is a secret: it stays in the worker's memory, never in logs or workflow inputs. */
  operator: { accountId: string; privateKey: string };
  /** The escrow account's key: a secret like the operator's (memory only; signs escrow payouts and refunds). */
  escrowPrivateKey: string;
}

export class DeploymentError extends Error {}

/** The deployment file at LOCALNET_CONFIG_PATH, parsed. */
function readDeploymentFile(config: Config): { path: string; file: Record<string, any> } {
  const path = config.LOCALNET_CONFIG_PATH;
  if (!fs.existsSync(path)) {
    throw new DeploymentError(`ledger deployment file ${path} not found (LOCALNET_CONFIG_PATH); start localnet (npm run dev) or run the bootstrap against ${config.HEDERA_NETWORK}`);
  }
  return { path, file: JSON.parse(fs.readFileSync(path, 'utf8')) };
}

/** The public part of a deployment file with the environment's overrides; `extraMissing` joins the one error line. */
function publicPartOf(config: Config, path: string, file: Record<string, any>, extraMissing: (string | false)[] = []): PublicLedgerDeployment {
  const operatorId: string | undefined = config.HEDERA_OPERATOR_ID ?? file.operator?.accountId;
  const missing = [
    !operatorId && 'operator.accountId (or HEDERA_OPERATOR_ID)',
    ...extraMissing,
    !(config.HEDERA_MIRROR_URL ?? file.mirrorUrl) && 'mirrorUrl (or HEDERA_MIRROR_URL)',
    !file.passportTokenId && 'passportTokenId',
    !file.topics?.audit && 'topics',
  ].filter(Boolean);
  if (missing.length) throw new DeploymentError(`ledger deployment ${path} lacks: ${missing.join(', ')}`);
  const fileEscrow: unknown = file.escrow;
  const escrow = config.ESCROW_ACCOUNT_ID ?? (typeof fileEscrow === 'string' ? fileEscrow : (fileEscrow as { accountId?: string } | undefined)?.accountId) ?? operatorId!;
  if (config.NODE_ENV === 'production' && [operatorId, file.treasury, file.payTo].includes(escrow)) {
    throw new DeploymentError(`the escrow account ${escrow} is also the operator, treasury or payTo account: escrowed money must sit in an account of its own (ESCROW_ACCOUNT_ID / ESCROW_PRIVATE_KEY; npm run bootstrap:network creates one)`);
  }
  return {
    network: (file.network ?? config.HEDERA_NETWORK) as HederaNetworkName,
    node: file.node,
    mirrorUrl: config.HEDERA_MIRROR_URL ?? file.mirrorUrl,
    facilitatorUrl: config.FACILITATOR_URL ?? file.facilitator?.url,
    operator: { accountId: operatorId! },
    treasury: file.treasury,
    escrow,
    payTo: file.payTo,
    passportTokenId: file.passportTokenId,
    topics: file.topics,
    apiUrl: file.apiUrl,
  };
}

/** The API's deployment: no key is read (neither the file's nor the environment's), so none is held. */
export function loadPublicLedgerDeployment(config: Config): PublicLedgerDeployment {
  const { path, file } = readDeploymentFile(config);
  return publicPartOf(config, path, file);
}

/** The worker's deployment: the public part and the operator and escrow keys. */
export function loadLedgerDeployment(config: Config): LedgerDeployment {
  const { path, file } = readDeploymentFile(config);
  const operatorKey: string | undefined = config.HEDERA_OPERATOR_KEY ?? file.operator?.privateKey;
  const pub = publicPartOf(config, path, file, [!operatorKey && 'operator.privateKey (or HEDERA_OPERATOR_KEY)']);
  const fileEscrow: unknown = file.escrow;
  const escrowPrivateKey: string | undefined =
    config.ESCROW_PRIVATE_KEY ?? file.escrowPrivateKey ?? (fileEscrow as { privateKey?: string } | undefined)?.privateKey ?? (config.ESCROW_ACCOUNT_ID ? undefined : operatorKey);
  if (!escrowPrivateKey) throw new DeploymentError(`ESCROW_ACCOUNT_ID ${pub.escrow} is set without ESCROW_PRIVATE_KEY: the escrow account's key signs its payouts and refunds`);
  return { ...pub, operator: { accountId: pub.operator.accountId, privateKey: operatorKey! }, escrowPrivateKey };
}

/** The public part of a deployment (a copy without its keys). */
export function publicDeployment(d: PublicLedgerDeployment): PublicLedgerDeployment {
  return {
    network: d.network,
    node: d.node,
    mirrorUrl: d.mirrorUrl,
    facilitatorUrl: d.facilitatorUrl,
    operator: { accountId: d.operator.accountId },
    treasury: d.treasury,
    escrow: d.escrow,
    payTo: d.payTo,
    passportTokenId: d.passportTokenId,
    topics: d.topics,
    apiUrl: d.apiUrl,
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
