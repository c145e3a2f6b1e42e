/**
 * The local EVM node of `npm run dev`: anvil with its state in .data/anvil-state.json (so a
 * restart keeps the chain) on EVM_PORT (default 8545), and both contracts deployed once (their
 * addresses recorded in .data/evm-contracts.json and reused while their code is on chain).
 */
import path from 'node:path';
import { startAnvil } from './anvil.js';
import { createEvmPublicClient, createEvmWalletClient } from './clients.js';
import { deployContracts } from './deploy.js';

export async function startDevEvm(opts: { dataDir: string; port?: number; log?: (line: string) => void }) {
  const anvil = await startAnvil({ port: opts.port ?? Number(process.env.EVM_PORT ?? 8545), stateFile: path.join(opts.dataDir, 'anvil-state.json') });
  const endpoint = { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId };
  const deployer = anvil.accounts[0];
  const contracts = await deployContracts({
    publicClient: createEvmPublicClient(endpoint),
    walletClient: createEvmWalletClient(endpoint, deployer.privateKey),
    recordFile: path.join(opts.dataDir, 'evm-contracts.json'),
  });
  opts.log?.(`anvil at ${anvil.rpcUrl} (chain ${anvil.chainId}); passport ${contracts.passport}, escrow ${contracts.escrow}`);
  return {
    rpcUrl: anvil.rpcUrl,
    chainId: anvil.chainId,
    contracts: { passport: contracts.passport, escrow: contracts.escrow },
    accounts: anvil.accounts,
    env: {
      EVM_RPC_URL: anvil.rpcUrl,
      EVM_CHAIN_ID: String(anvil.chainId),
      PASSPORT_CONTRACT_ADDRESS: contracts.passport,
      ESCROW_CONTRACT_ADDRESS: contracts.escrow,
    },
    stop: () => anvil.stop(),
  };
}
