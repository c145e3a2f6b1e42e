/** viem clients for an EVM JSON-RPC endpoint (anvil locally, Hedera's JSON-RPC relay or any RPC). */
import {
  createPublicClient,
  createWalletClient,
  defineChain,
  http,
  type Account,
  type Chain,
  type Hex,
  type HttpTransport,
  type PublicClient,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { withSpan } from '../telemetry/spans.js';

export interface EvmEndpoint {
  rpcUrl: string;
  chainId: number;
  /** Milliseconds between polls (receipts, blocks); default 50 for loopback URLs, 1000 otherwise. */
  pollingInterval?: number;
  /** Per-request timeout in ms; default 10000. */
  timeout?: number;
  /** Transport retries of viem itself; default 0 (callers such as Temporal activities retry). */
  retryCount?: number;
}

export type EvmPublicClient = PublicClient<HttpTransport, Chain>;
export type EvmWalletClient = WalletClient<HttpTransport, Chain, Account>;

function isLoopback(url: string): boolean {
  return /^https?:\/\/(127\.0\.0\.1|localhost|\[::1\])(:|\/|$)/.test(url);
}

export function evmChain(chainId: number, rpcUrl: string): Chain {
  return defineChain({
    id: chainId,
    name: chainId === 31337 ? 'anvil' : chainId === 296 ? 'hedera-testnet' : `evm-${chainId}`,
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

function transport(ep: EvmEndpoint): HttpTransport {
  return traced(http(ep.rpcUrl, { timeout: ep.timeout ?? 10_000, retryCount: ep.retryCount ?? 0 }));
}

/** Each JSON-RPC call in a span `evm <method>` while tracing runs (telemetry/spans.ts): the method only, never its params. */
function traced(inner: HttpTransport): HttpTransport {
  return ((options) => {
    const t = inner(options);
    const request: typeof t.request = (args, opts) =>
      withSpan(`evm ${args.method}`, { 'rpc.system': 'ethereum_jsonrpc', 'rpc.method': args.method }, () => t.request(args, opts));
    return { ...t, request };
  }) as HttpTransport;
}

export function createEvmPublicClient(ep: EvmEndpoint): EvmPublicClient {
  return createPublicClient({
    chain: evmChain(ep.chainId, ep.rpcUrl),
    transport: transport(ep),
    pollingInterval: ep.pollingInterval ?? (isLoopback(ep.rpcUrl) ? 50 : 1000),
    cacheTime: 0,
  }) as EvmPublicClient;
}

export function createEvmWalletClient(ep: EvmEndpoint, privateKey: Hex): EvmWalletClient {
  return createWalletClient({
    account: privateKeyToAccount(privateKey),
    chain: evmChain(ep.chainId, ep.rpcUrl),
    transport: transport(ep),
    pollingInterval: ep.pollingInterval ?? (isLoopback(ep.rpcUrl) ? 50 : 1000),
    cacheTime: 0,
  });
}
