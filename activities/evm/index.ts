/**
 * EVM activity group built from config: the chain indexer for the passport and escrow contracts, and
 * the attestation of trust snapshots (attestDomain) when EVM_ATTESTER_KEY is set.
 * Empty when no EVM chain is configured (EVM_RPC_URL, EVM_CHAIN_ID and at least one contract address).
 */
import type { Sql } from 'postgres';
import { getAddress, type Hex } from 'viem';
import type { Config } from '../../config/index.js';
import { createEvmPublicClient, createEvmWalletClient } from '../../evm/clients.js';
import { createAttestActivities, type AttestActivities } from './attest.js';
import { createIndexerActivities, type IndexerActivities, type IndexerSource } from './indexer.js';

export * from './indexer.js';
export * from './attest.js';

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

export function createEvmActivities(deps: { config: Config; sql: Sql }): Partial<IndexerActivities & AttestActivities> {
  const { config, sql } = deps;
  const sources = indexerSourcesFromConfig(config);
  if (!config.EVM_RPC_URL || !config.EVM_CHAIN_ID || sources.length === 0) return {};
  const client = createEvmPublicClient({ rpcUrl: config.EVM_RPC_URL, chainId: config.EVM_CHAIN_ID });
  // trust snapshot attestations (issue 11): with an attester key that is a minter of the passport contract
  const attest =
    config.EVM_ATTESTER_KEY && config.PASSPORT_CONTRACT_ADDRESS
      ? createAttestActivities({
          sql,
          chainId: config.EVM_CHAIN_ID,
          contract: getAddress(config.PASSPORT_CONTRACT_ADDRESS.toLowerCase()),
          publicClient: client,
          walletClient: createEvmWalletClient({ rpcUrl: config.EVM_RPC_URL, chainId: config.EVM_CHAIN_ID }, config.EVM_ATTESTER_KEY as Hex),
        })
      : {};
  return {
    ...attest,
    ...createIndexerActivities({
      sql,
      clients: { [config.EVM_CHAIN_ID]: client },
      sources,
      confirmations: config.INDEXER_CONFIRMATIONS,
      maxBlockRange: config.INDEXER_MAX_BLOCK_RANGE,
    }),
  };
}
