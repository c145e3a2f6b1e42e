/** Shared helpers of the test/evm suites: a fresh anvil with both contracts, clients, revert checks. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BaseError, ContractFunctionRevertedError, getAddress, type Abi, type Address, type Hex } from 'viem';
import { compileSources, type Artifact } from '../../contracts/compile.js';
import { startAnvil, type AnvilHandle, type StartAnvilOptions } from '../../evm/anvil.js';
import {
  createEvmPublicClient,
  createEvmWalletClient,
  type EvmPublicClient,
  type EvmWalletClient,
} from '../../evm/clients.js';
import { deployContracts, type ContractAddresses } from '../../evm/deploy.js';

const here = dirname(fileURLToPath(import.meta.url));

export interface TestChain {
  anvil: AnvilHandle;
  publicClient: EvmPublicClient;
  /** wallets[i] signs as anvil.accounts[i]; wallets[0] deployed the contracts and is their owner/arbiter. */
  wallets: EvmWalletClient[];
  addresses: ContractAddresses;
  deployBlock: bigint;
}

export async function startTestChain(opts: StartAnvilOptions = {}): Promise<TestChain> {
  const anvil = await startAnvil({ port: 0, ...opts });
  const ep = { rpcUrl: anvil.rpcUrl, chainId: anvil.chainId };
  const publicClient = createEvmPublicClient(ep);
  const wallets = anvil.accounts.map((a) => createEvmWalletClient(ep, a.privateKey));
  const d = await deployContracts({ publicClient, walletClient: wallets[0]! });
  return {
    anvil,
    publicClient,
    wallets,
    addresses: { passport: d.passport, escrow: d.escrow },
    deployBlock: d.blockNumbers.passport ?? 0n,
  };
}

let fixtures: Record<string, Artifact> | undefined;
/** Test-only contracts of test/evm/fixtures/Fixtures.sol. */
export function fixtureArtifacts(): Record<string, Artifact> {
  fixtures ??= compileSources({ 'Fixtures.sol': readFileSync(join(here, 'fixtures', 'Fixtures.sol'), 'utf8') });
  return fixtures;
}

export async function deployFixture(
  chain: TestChain,
  name: string,
  args: readonly unknown[] = [],
  wallet = chain.wallets[0]!,
): Promise<{ address: Address; abi: Abi }> {
  const a = fixtureArtifacts()[name];
  if (!a) throw new Error(`no fixture ${name}`);
  const abi = a.abi as Abi;
  const hash = await wallet.deployContract({ abi, bytecode: a.bytecode, args });
  const receipt = await chain.publicClient.waitForTransactionReceipt({ hash });
  return { address: getAddress(receipt.contractAddress!), abi };
}

/** Resolves to the revert's custom error name (or require reason) of a failed contract call. */
export async function revertOf(p: Promise<unknown>): Promise<{ name: string; args: readonly unknown[] }> {
  try {
    await p;
  } catch (err) {
    if (err instanceof BaseError) {
      const revert = err.walk((e) => e instanceof ContractFunctionRevertedError);
      if (revert instanceof ContractFunctionRevertedError) {
        if (revert.data?.errorName) {
          return { name: revert.data.errorName, args: revert.data.args ?? [] };
        }
        if (revert.reason) return { name: revert.reason, args: [] };
      }
    }
    throw err;
  }
  throw new Error('expected the call to revert, it succeeded');
}

export async function mined(chain: TestChain, hash: Promise<Hex> | Hex) {
  const receipt = await chain.publicClient.waitForTransactionReceipt({ hash: await hash });
  if (receipt.status !== 'success') throw new Error(`tx ${receipt.transactionHash} reverted`);
  return receipt;
}
