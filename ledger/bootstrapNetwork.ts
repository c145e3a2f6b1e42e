/**
 * One-time set-up of the service's ledger objects on a public network (testnet, mainnet,
 * previewnet) with an operator account: the passport NFT collection (treasury, supply, wipe,
 * metadata, freeze and admin keys = the operator's) and the four topics (directory, audit, a2a,
 * marketplace). Returns the deployment description the API and the worker read
 * (LOCALNET_CONFIG_PATH); localnet writes the same shape for itself. Treasury, payTo and escrow
 * are the operator account unless given.
 */
import { Client, Hbar, PrivateKey, TokenCreateTransaction, TokenSupplyType, TokenType, TopicCreateTransaction } from '@hashgraph/sdk';
import type { LedgerDeployment } from './deployment.js';

export interface BootstrapNetworkOptions {
  client: Client; // with the operator set
  network: LedgerDeployment['network'];
  operator: { accountId: string; privateKey: PrivateKey };
  node?: LedgerDeployment['node'];
  mirrorUrl: string;
  facilitatorUrl?: string;
  payTo?: string;
  escrow?: string;
}

/** The deployment file: everything but the operator's key, which stays in HEDERA_OPERATOR_KEY. */
export type DeploymentFile = Omit<LedgerDeployment, 'operator'> & { operator: { accountId: string } };

export async function bootstrapNetwork(opts: BootstrapNetworkOptions): Promise<DeploymentFile> {
  const { client, operator } = opts;
  const key = operator.privateKey.publicKey;
  const token = await new TokenCreateTransaction()
    .setTokenName('Agent Passport')
    .setTokenSymbol('AGENTPASS')
    .setTokenType(TokenType.NonFungibleUnique)
    .setSupplyType(TokenSupplyType.Infinite)
    .setDecimals(0)
    .setInitialSupply(0)
    .setTreasuryAccountId(operator.accountId)
    .setAdminKey(key)
    .setSupplyKey(key)
    .setWipeKey(key)
    .setMetadataKey(key)
    // non-transferable passports: each holder's relationship is frozen after delivery
    .setFreezeKey(key)
    .setFreezeDefault(false)
    .setMaxTransactionFee(new Hbar(50))
    .execute(client);
  const tokenId = (await token.getReceipt(client)).tokenId!.toString();

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
    treasury: operator.accountId,
    escrow: opts.escrow ?? operator.accountId,
    payTo: opts.payTo ?? operator.accountId,
    passportTokenId: tokenId,
    topics: topics as LedgerDeployment['topics'],
  };
}
