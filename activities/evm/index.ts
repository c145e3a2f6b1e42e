/**
 * EVM activity group built from config: the chain indexer for the passport and escrow contracts.
 * Empty when no EVM chain is configured (EVM_RPC_URL, EVM_CHAIN_ID and at least one contract address).
 */
import type { Sql } from 'postgres';
import { getAddress } from 'viem';
import type { Config } from '../../config/index.js';
import { createEvmPublicClient } from '../../evm/clients.js';
import { createIndexerActivities, type IndexerActivities, type IndexerSource } from './indexer.js';

export * from './indexer.js';

/** The indexed contracts named by config. */
export function indexerSourcesFromConfig(config: Config): IndexerSource[] {
  if (!config.EVM_CHAIN_ID) return [];
  const out: IndexerSource[] = [];
  // INDEXER_START_BLOCK: on a long chain (Hedera testnet) start at the contracts' deployment block.
  const startBlock = config.INDEXER_START_BLOCK;
  if (config.PASSPORT_CONTRACT_ADDRESS) out.push({ chainId: config.EVM_CHAIN_ID, source: 'passport', address: getAddress(config.PASSPORT_CONTRACT_ADDRESS.toLowerCase()), startBlock });
  if (config.ESCROW_CONTRACT_ADDRESS) out.push({ chainId: config.EVM_CHAIN_ID, source: 'escrow', address: getAddress(config.ESCROW_CONTRACT_ADDRESS.toLowerCase()), startBlock });
  return out;
}

export function createEvmActivities(deps: { config: Config; sql: Sql }): Partial<IndexerActivities> {
  const { config, sql } = deps;
  const sources = indexerSourcesFromConfig(config);
  if (!config.EVM_RPC_URL || !config.EVM_CHAIN_ID || sources.length === 0) return {};
  const client = createEvmPublicClient({ rpcUrl: config.EVM_RPC_URL, chainId: config.EVM_CHAIN_ID });
  return createIndexerActivities({
    sql,
    clients: { [config.EVM_CHAIN_ID]: client },
    sources,
    confirmations: config.INDEXER_CONFIRMATIONS,
    maxBlockRange: config.INDEXER_MAX_BLOCK_RANGE,
  });
}
