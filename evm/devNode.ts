/**
 * The local EVM node of `npm run dev`: anvil on 127.0.0.1:8545 (cancun) with its state in
 * <dataDir>/anvil-state.json, and both contracts deployed once (addresses recorded in
 * <dataDir>/evm-contracts.json; a restart reuses them because the state file keeps their code).
 */
import { join } from 'node:path';
import { startAnvil, type AnvilAccount } from './anvil.js';
import { createEvmPublicClient, createEvmWalletClient } from './clients.js';
import { deployContracts, type ContractAddresses } from './deploy.js';

export interface DevEvm {
  rpcUrl: string;
  chainId: number;
  contracts: ContractAddresses;
  accounts: AnvilAccount[];
  /** Environment for the worker and the API (config/index.ts names). */
  env: Record<string, string>;
  stop(): Promise<void>;
}

export async function startDevEvm(opts: { dataDir: string; port?: number; log?: (line: string) => void }): Promise<DevEvm> {
  const log = opts.log ?? (() => {});
  const anvil = await startAnvil({ port: opts.port ?? 8545, stateFile: join(opts.dataDir, 'anvil-state.json') });
  try {
    const ep = { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId };
    const publicClient = createEvmPublicClient(ep);
    const walletClient = createEvmWalletClient(ep, anvil.accounts[0]!.privateKey);
    const d = await deployContracts({ publicClient, walletClient, recordFile: join(opts.dataDir, 'evm-contracts.json') });
    const head = await publicClient.getBlockNumber();
    log(
      `anvil ${anvil.rpcUrl} chain ${anvil.chainId} at block ${head}; passport ${d.passport}${d.deployed.passport ? ' (deployed)' : ''}, escrow ${d.escrow}${d.deployed.escrow ? ' (deployed)' : ''}`,
    );
    return {
      rpcUrl: anvil.rpcUrl,
      chainId: anvil.chainId,
      contracts: { passport: d.passport, escrow: d.escrow },
      accounts: anvil.accounts,
      env: {
        EVM_RPC_URL: anvil.rpcUrl,
        EVM_CHAIN_ID: String(anvil.chainId),
        PASSPORT_CONTRACT_ADDRESS: d.passport,
        ESCROW_CONTRACT_ADDRESS: d.escrow,
        INDEXER_CONFIRMATIONS: '0',
        // anvil's first account deployed the contracts (their owner), so it may call attestDomain
        EVM_ATTESTER_KEY: anvil.accounts[0]!.privateKey,
      },
      stop: () => anvil.stop(),
    };
  } catch (err) {
    await anvil.stop();
    throw err;
  }
}
