/**
 * Deploys AgentPassport and TaskEscrow. Idempotent: an address already recorded (passed in, or in
 * the record file under the chain id) whose code is present on chain is reused, not redeployed.
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { getAddress, type Address, type Hex } from 'viem';
import { agentPassportAbi, taskEscrowAbi } from './abis.js';
import { agentPassportBytecode, taskEscrowBytecode } from './bytecode.js';
import type { EvmPublicClient, EvmWalletClient } from './clients.js';

export interface ContractAddresses {
  passport: Address;
  escrow: Address;
}

export interface DeployOptions {
  publicClient: EvmPublicClient;
  walletClient: EvmWalletClient;
  /** Addresses already recorded (e.g. from env or .data/localnet.json). */
  existing?: Partial<ContractAddresses>;
  /** JSON file { "<chainId>": { passport, escrow } } read before and written after deploying. */
  recordFile?: string;
  /** Arbiter of TaskEscrow; default the deployer. */
  arbiter?: Address;
  /** Extra minters authorised on AgentPassport (the deployer is its owner and may always mint). */
  minters?: Address[];
}

export interface DeployResult extends ContractAddresses {
  /** Which contracts were deployed by this call (false: reused). */
  deployed: { passport: boolean; escrow: boolean };
  /** Block number of the first deployment of each contract in this call (indexers may start there). */
  blockNumbers: { passport?: bigint; escrow?: bigint };
}

type RecordFile = Record<string, Partial<ContractAddresses>>;

function readRecord(file: string | undefined): RecordFile {
  if (!file || !existsSync(file)) return {};
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as RecordFile;
  } catch {
    return {};
  }
}

/** True when `address` holds contract code on the client's chain. */
export async function hasCode(client: EvmPublicClient, address: Address | undefined): Promise<boolean> {
  if (!address) return false;
  const code = await client.getCode({ address });
  return code !== undefined && code !== '0x';
}

async function deployOne(
  publicClient: EvmPublicClient,
  walletClient: EvmWalletClient,
  hash: Promise<Hex>,
): Promise<{ address: Address; blockNumber: bigint }> {
  const receipt = await publicClient.waitForTransactionReceipt({ hash: await hash });
  if (receipt.status !== 'success' || !receipt.contractAddress) {
    throw new Error(`deployment ${receipt.transactionHash} failed`);
  }
  return { address: getAddress(receipt.contractAddress), blockNumber: receipt.blockNumber };
}

export async function deployContracts(opts: DeployOptions): Promise<DeployResult> {
  const { publicClient, walletClient } = opts;
  const chainId = publicClient.chain.id;
  const record = readRecord(opts.recordFile);
  const known: Partial<ContractAddresses> = { ...record[String(chainId)], ...stripUndefined(opts.existing) };

  const result: DeployResult = {
    passport: known.passport ?? ('0x' as Address),
    escrow: known.escrow ?? ('0x' as Address),
    deployed: { passport: false, escrow: false },
    blockNumbers: {},
  };

  if (!(await hasCode(publicClient, known.passport))) {
    const d = await deployOne(
      publicClient,
      walletClient,
      walletClient.deployContract({ abi: agentPassportAbi, bytecode: agentPassportBytecode }),
    );
    result.passport = d.address;
    result.deployed.passport = true;
    result.blockNumbers.passport = d.blockNumber;
    for (const minter of opts.minters ?? []) {
      const hash = await walletClient.writeContract({
        address: d.address,
        abi: agentPassportAbi,
        functionName: 'setMinter',
        args: [minter, true],
      });
      await publicClient.waitForTransactionReceipt({ hash });
    }
  }
  if (!(await hasCode(publicClient, known.escrow))) {
    const d = await deployOne(
      publicClient,
      walletClient,
      walletClient.deployContract({
        abi: taskEscrowAbi,
        bytecode: taskEscrowBytecode,
        args: [opts.arbiter ?? walletClient.account.address],
      }),
    );
    result.escrow = d.address;
    result.deployed.escrow = true;
    result.blockNumbers.escrow = d.blockNumber;
  }

  if (opts.recordFile && (result.deployed.passport || result.deployed.escrow)) {
    const fresh = readRecord(opts.recordFile);
    fresh[String(chainId)] = { passport: result.passport, escrow: result.escrow };
    mkdirSync(dirname(opts.recordFile), { recursive: true });
    writeFileSync(opts.recordFile, `${JSON.stringify(fresh, null, 2)}\n`);
  }
  return result;
}

function stripUndefined<T extends object>(o: T | undefined): Partial<T> {
  if (!o) return {};
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined && v !== '')) as Partial<T>;
}
