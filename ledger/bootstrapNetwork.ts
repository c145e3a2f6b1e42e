/**
 * One-time set-up of the service's ledger objects on a public network (testnet, mainnet,
 * previewnet) with an operator account: the passport NFT collection (supply, wipe, metadata, freeze
 * and admin keys = the operator's), the four topics (directory, audit, a2a, marketplace) and the
 * service's accounts. Returns the deployment description the API and the worker read
 * (LOCALNET_CONFIG_PATH); localnet writes the same shape for itself.
 *
 * Accounts (issue 26 item 9): the operator pays the service's fees; the treasury (the collection's
 * treasury, which holds a passport until delivery, and receives the marketplace fees) and payTo (the
 * x402 payments, and their refunds) are accounts of their own, created here with the operator's key
 * (the worker signs for them) and nothing in them, so money received and fees paid never mix in one
 * balance: each balance is what it received. Either may be given instead (an existing account).
 * The marketplace escrow is an account of its own (issue 19): given,
 * or created here with `escrowKey` (a key the caller generated and keeps: it goes into
 * ESCROW_PRIVATE_KEY, never into the file) and nothing in it; without either it stays the operator
 * (development only: the worker refuses that in production).
 *
 * Migration of a deployment whose collection has no freeze key (created before passports became
 * non-transferable; Hedera cannot add a key a token was created without): passportCollectionProblems
 * tells, migratePassportCollection creates a new collection with every key and returns the same
 * deployment with the new passportTokenId (topics, accounts and old passports unchanged).
 */
import { AccountCreateTransaction, Client, Hbar, PrivateKey, PublicKey, TokenCreateTransaction, TokenSupplyType, TokenType, TopicCreateTransaction } from '@hashgraph/sdk';
import type { LedgerDeployment, PublicLedgerDeployment } from './deployment.js';
import type { MirrorClient } from './mirror.js';

export interface BootstrapNetworkOptions {
  client: Client; // with the operator set
  network: LedgerDeployment['network'];
  operator: { accountId: string; privateKey: PrivateKey };
  node?: LedgerDeployment['node'];
  mirrorUrl: string;
  facilitatorUrl?: string;
  /** an existing treasury account (default: a new one with the operator's key) */
  treasury?: string;
  /** an existing payTo account (default: a new one with the operator's key) */
  payTo?: string;
  escrow?: string;
  /** creates the escrow account with this key (when `escrow` is not given) */
  escrowKey?: PrivateKey;
}

/** The deployment file: everything but the keys (HEDERA_OPERATOR_KEY, ESCROW_PRIVATE_KEY). */
export type DeploymentFile = PublicLedgerDeployment;

/** A service account with `key` and no HBAR in it (its balance is then exactly what it received). */
async function createServiceAccount(client: Client, key: PublicKey, memo: string): Promise<string> {
  const tx = new AccountCreateTransaction().setKeyWithoutAlias(key).setInitialBalance(new Hbar(0)).setAccountMemo(memo);
  const receipt = await (await tx.execute(client)).getReceipt(client);
  return receipt.accountId!.toString();
}

/** The escrow account: its own key, no HBAR in it (its balance is then exactly the escrowed money). */
export async function createEscrowAccount(client: Client, key: PublicKey): Promise<string> {
  return createServiceAccount(client, key, 'marketplace escrow');
}

/** The passport collection: NFTs held by `treasury` until delivery, every service key = the operator's. */
async function createPassportCollection(client: Client, treasury: string, key: PublicKey): Promise<string> {
  const token = await new TokenCreateTransaction()
    .setTokenName('Agent Passport')
    .setTokenSymbol('AGENTPASS')
    .setTokenType(TokenType.NonFungibleUnique)
    .setSupplyType(TokenSupplyType.Infinite)
    .setDecimals(0)
    .setInitialSupply(0)
    .setTreasuryAccountId(treasury)
    .setAdminKey(key)
    .setSupplyKey(key)
    .setWipeKey(key)
    .setMetadataKey(key)
    // non-transferable passports: each holder's relationship is frozen after delivery
    .setFreezeKey(key)
    .setFreezeDefault(false)
    .setMaxTransactionFee(new Hbar(50))
    .execute(client);
  return (await token.getReceipt(client)).tokenId!.toString();
}

export async function bootstrapNetwork(opts: BootstrapNetworkOptions): Promise<DeploymentFile> {
  const { client, operator } = opts;
  const key = operator.privateKey.publicKey;
  const treasury = opts.treasury ?? (await createServiceAccount(client, key, 'passport treasury'));
  const payTo = opts.payTo ?? (await createServiceAccount(client, key, 'x402 payTo'));
  const tokenId = await createPassportCollection(client, treasury, key);
  const escrow = opts.escrow ?? (opts.escrowKey ? await createEscrowAccount(client, opts.escrowKey.publicKey) : operator.accountId);

  const topics: Record<string, string> = {};
  for (const name of ['directory', 'audit', 'a2a', 'marketplace'] as const) {
    // Only the service submits to directory, audit and marketplace; a2a is open (senders pay).
    const tx = new TopicCreateTransaction().setTopicMemo(`agent-passport ${name}`).setAdminKey(key);
    if (name !== 'a2a') tx.setSubmitKey(key);
    const receipt = await (await tx.execute(client)).getReceipt(client);
    topics[name] = receipt.topicId!.toString();
  }

  return {
    network: opts.network,
    node: opts.node,
    mirrorUrl: opts.mirrorUrl,
    facilitatorUrl: opts.facilitatorUrl,
    operator: { accountId: operator.accountId },
    treasury,
    escrow,
    payTo,
    passportTokenId: tokenId,
    topics: topics as LedgerDeployment['topics'],
  };
}

/**
 * What keeps an existing deployment's passport collection from serving this version: missing on the
 * ledger, or created without a freeze key (passports could be transferred). Empty when it is fine.
 */
export async function passportCollectionProblems(mirror: MirrorClient, tokenId: string): Promise<string[]> {
  const token = await mirror.get<{ freeze_key?: unknown; wipe_key?: unknown; deleted?: boolean }>(`/tokens/${encodeURIComponent(tokenId)}`);
  if (!token || token.deleted) return [`passport collection ${tokenId} does not exist on the ledger`];
  const problems: string[] = [];
  if (!token.freeze_key) problems.push(`passport collection ${tokenId} has no freeze key: passports cannot be made non-transferable, and Hedera cannot add a key to an existing token`);
  if (!token.wipe_key) problems.push(`passport collection ${tokenId} has no wipe key: passports cannot be revoked`);
  return problems;
}

/**
 * Creates a new passport collection (with the freeze key) for an existing deployment and returns
 * the deployment pointing at it. Nothing else changes: the topics keep their history, and passports
 * of the old collection stay readable (PostgreSQL, DID documents, the audit topic) but stay
 * transferable on the ledger; ownership checks read their holder from the ledger all the same.
 */
export async function migratePassportCollection(opts: { client: Client; operator: { accountId: string; privateKey: PrivateKey }; file: DeploymentFile }): Promise<DeploymentFile> {
  const passportTokenId = await createPassportCollection(opts.client, opts.file.treasury ?? opts.operator.accountId, opts.operator.privateKey.publicKey);
  return { ...opts.file, passportTokenId };
}
