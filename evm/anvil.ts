/**
 * Launcher of the local EVM node: anvil from the npm package @foundry-rs/anvil (the binary ships in
 * @foundry-rs/anvil-linux-amd64). Runs with --hardfork cancun (Hedera's EVM level), on 127.0.0.1,
 * with a fixed mnemonic so accounts are stable, and with --state <file> when given so a restart
 * keeps the chain (anvil dumps on SIGTERM/SIGINT and every stateInterval seconds).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { toHex, type Address, type Hex } from 'viem';
import { mnemonicToAccount } from 'viem/accounts';

/** anvil's well-known development mnemonic: the accounts are public, never fund them elsewhere. */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';
export const ANVIL_DEFAULT_CHAIN_ID = 31337;

export interface AnvilAccount {
  address: Address;
  privateKey: Hex;
}

export interface StartAnvilOptions {
  /** Port to listen on; 0 (default) picks a free port. */
  port?: number;
  /** State file for persistence across restarts (--state). */
  stateFile?: string;
  /** Seconds between blocks (interval mining); default automine (one block per transaction). */
  blockTime?: number;
  /** Chain id; default 31337. */
  chainId?: number;
  /** Number of funded dev accounts; default 10. */
  accounts?: number;
  /** Seconds between periodic state dumps when stateFile is set; default 1. */
  stateInterval?: number;
  /** Block gas limit; default anvil's (30M). */
  gasLimit?: bigint;
  /** Extra anvil arguments. */
  extraArgs?: string[];
  /** Milliseconds to wait for the node to listen; default 15000. */
  startTimeoutMs?: number;
}

export interface AnvilHandle {
  rpcUrl: string;
  chainId: number;
  port: number;
  accounts: AnvilAccount[];
  /** Stops the node (SIGTERM, so it dumps --state), resolves when the process has exited. */
  stop(): Promise<void>;
  process: ChildProcess;
}

/** Absolute path of the anvil binary inside node_modules (override with ANVIL_PATH). */
export function anvilBinaryPath(): string {
  if (process.env.ANVIL_PATH) return process.env.ANVIL_PATH;
  const require = createRequire(import.meta.url);
  const pkg = require.resolve('@foundry-rs/anvil-linux-amd64/package.json');
  const bin = join(dirname(pkg), 'bin', 'anvil');
  if (!existsSync(bin)) throw new Error(`anvil binary not found at ${bin}`);
  return bin;
}

/** The deterministic dev accounts of ANVIL_MNEMONIC. */
export function devAccounts(count = 10, mnemonic = ANVIL_MNEMONIC): AnvilAccount[] {
  const out: AnvilAccount[] = [];
  for (let i = 0; i < count; i++) {
    const acct = mnemonicToAccount(mnemonic, { addressIndex: i });
    const pk = acct.getHdKey().privateKey;
    if (!pk) throw new Error('cannot derive private key');
    out.push({ address: acct.address, privateKey: toHex(pk) });
  }
  return out;
}

export async function startAnvil(opts: StartAnvilOptions = {}): Promise<AnvilHandle> {
  const chainId = opts.chainId ?? ANVIL_DEFAULT_CHAIN_ID;
  const accountCount = opts.accounts ?? 10;
  const args = [
    '--host', '127.0.0.1',
    '--port', String(opts.port ?? 0),
    '--hardfork', 'cancun',
    '--mnemonic', ANVIL_MNEMONIC,
    '--accounts', String(accountCount),
    '--chain-id', String(chainId),
  ];
  if (opts.stateFile) {
    args.push('--state', opts.stateFile, '--state-interval', String(opts.stateInterval ?? 1), '--preserve-historical-states');
  }
  if (opts.blockTime !== undefined && opts.blockTime > 0) args.push('--block-time', String(opts.blockTime));
  if (opts.gasLimit !== undefined) args.push('--gas-limit', opts.gasLimit.toString());
  if (opts.extraArgs) args.push(...opts.extraArgs);

  const child = spawn(anvilBinaryPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise<void>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else child.once('exit', () => resolve());
  });

  let output = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      cleanup();
      child.kill('SIGKILL');
      reject(new Error(`anvil did not start within ${opts.startTimeoutMs ?? 15000} ms:\n${output.slice(-2000)}`));
    }, opts.startTimeoutMs ?? 15000);
    const onData = (buf: Buffer) => {
      output += buf.toString();
      const m = /Listening on [\d.]+:(\d+)/.exec(output);
      if (m) {
        cleanup();
        resolve(Number(m[1]));
      }
    };
    const onExit = (code: number | null) => {
      cleanup();
      reject(new Error(`anvil exited with code ${code} before listening:\n${output.slice(-2000)}`));
    };
    const onError = (err: Error) => {
      cleanup();
      reject(err);
    };
    function cleanup() {
      clearTimeout(timer);
      child.stdout!.off('data', onData);
      child.stderr!.off('data', onData);
      child.off('exit', onExit);
      child.off('error', onError);
    }
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', onExit);
    child.once('error', onError);
  });
  // keep draining output so the pipe never fills up and blocks anvil
  child.stdout!.resume();
  child.stderr!.resume();

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    if (stopping) return stopping;
    stopping = (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(t);
      }
    })();
    return stopping;
  };

  return {
    rpcUrl: `http://127.0.0.1:${port}`,
    chainId,
    port,
    accounts: devAccounts(accountCount),
    stop,
    process: child,
  };
}
