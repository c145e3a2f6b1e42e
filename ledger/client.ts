// Builds the SDK Client for a Hedera network from configuration: local (our localnet: one node at a
// given address), testnet, mainnet, previewnet; an operator; and tuned retry/backoff.
import { AccountId, Client, Hbar } from '@hashgraph/sdk';
import { parsePrivateKey, transactionSigner, type KeyType } from '@agent-passport/core/keys';
import type { HederaNetwork } from '@agent-passport/core/did';

/** The networks of did:hedera (one list: @agent-passport/core/did). */
export type HederaNetworkName = HederaNetwork;

export interface LedgerNode {
  /** host:port of the node's HAPI gRPC endpoint, e.g. 127.0.0.1:50211 */
  address: string;
  /** the node's account id, e.g. 0.0.3 */
  accountId: string;
}

export interface RetryOptions {
  /** attempts per request (SDK default 10) */
  maxAttempts?: number;
  /** first backoff between attempts after BUSY/PLATFORM_NOT_ACTIVE; doubled per attempt */
  minBackoffMs?: number;
  /** backoff cap */
  maxBackoffMs?: number;
  /** overall deadline of one request including retries */
  requestTimeoutMs?: number;
  /** deadline of one gRPC call */
  grpcDeadlineMs?: number;
  /** how long a node that answered gRPC UNAVAILABLE is parked at first / at most */
  nodeMinBackoffMs?: number;
  nodeMaxBackoffMs?: number;
}

export interface LedgerClientOptions {
  network: HederaNetworkName;
  /** required for `local`; optional override of the node list elsewhere */
  node?: LedgerNode;
  nodes?: LedgerNode[];
  operator?: { accountId: string; privateKey: string; keyType?: KeyType };
  retry?: RetryOptions;
  /** default max transaction fee in HBAR (default 5) */
  defaultMaxTransactionFeeHbar?: number;
}

/** Defaults chosen for a service: a few quick retries, bounded by a request deadline. */
export const DEFAULT_RETRY: Required<RetryOptions> = {
  maxAttempts: 10,
  minBackoffMs: 250,
  maxBackoffMs: 8_000,
  requestTimeoutMs: 120_000,
  grpcDeadlineMs: 10_000,
  nodeMinBackoffMs: 8_000,
  nodeMaxBackoffMs: 60_000,
};

/** Retry settings for tests and localnet: short backoffs, short deadlines. */
export const LOCAL_RETRY: Required<RetryOptions> = {
  maxAttempts: 20,
  minBackoffMs: 25,
  maxBackoffMs: 400,
  requestTimeoutMs: 30_000,
  grpcDeadlineMs: 5_000,
  nodeMinBackoffMs: 250,
  nodeMaxBackoffMs: 1_000,
};

export function createLedgerClient(options: LedgerClientOptions): Client {
  const retry = { ...(options.network === 'local' ? LOCAL_RETRY : DEFAULT_RETRY), ...(options.retry ?? {}) };
  const nodes = options.nodes ?? (options.node ? [options.node] : undefined);
  let client: Client;
  if (nodes && nodes.length > 0) {
    const map: Record<string, AccountId> = {};
    for (const n of nodes) map[n.address] = AccountId.fromString(n.accountId);
    client = Client.forNetwork(map, { scheduleNetworkUpdate: false } as never);
  } else {
    switch (options.network) {
      case 'testnet':
        client = Client.forTestnet({ scheduleNetworkUpdate: false });
        break;
      case 'mainnet':
        client = Client.forMainnet({ scheduleNetworkUpdate: false });
        break;
      case 'previewnet':
        client = Client.forPreviewnet({ scheduleNetworkUpdate: false });
        break;
      default:
        throw new Error('a local ledger client needs node.address and node.accountId');
    }
  }
  if (options.operator) {
    // setOperatorWith: the SDK signs with our signer (ED25519 by Node's crypto, see keys.ts).
    const key = parsePrivateKey(options.operator.privateKey, options.operator.keyType);
    client.setOperatorWith(AccountId.fromString(options.operator.accountId), key.publicKey, transactionSigner(key));
  }
  // order matters: the SDK refuses min > max and warns when grpcDeadline >= requestTimeout
  const maxBackoff = Math.max(retry.maxBackoffMs, retry.minBackoffMs);
  if (retry.minBackoffMs > client.maxBackoff) {
    client.setMaxBackoff(maxBackoff);
    client.setMinBackoff(retry.minBackoffMs);
  } else {
    client.setMinBackoff(retry.minBackoffMs);
    client.setMaxBackoff(maxBackoff);
  }
  const grpcDeadline = Math.min(retry.grpcDeadlineMs, retry.requestTimeoutMs - 1);
  if (retry.requestTimeoutMs > client.grpcDeadline) {
    client.setRequestTimeout(retry.requestTimeoutMs);
    client.setGrpcDeadline(grpcDeadline);
  } else {
    client.setGrpcDeadline(grpcDeadline);
    client.setRequestTimeout(retry.requestTimeoutMs);
  }
  const nodeMax = Math.max(retry.nodeMaxBackoffMs, retry.nodeMinBackoffMs);
  if (retry.nodeMinBackoffMs > client.nodeMaxBackoff) {
    client.setNodeMaxBackoff(nodeMax);
    client.setNodeMinBackoff(retry.nodeMinBackoffMs);
  } else {
    client.setNodeMinBackoff(retry.nodeMinBackoffMs);
    client.setNodeMaxBackoff(nodeMax);
  }
  // per-request maxAttempts stays usable when the client leaves it unset (the SDK prefers the
  // client's value over the request's), so only set it when asked to
  if (options.retry?.maxAttempts !== undefined) client.setMaxAttempts(retry.maxAttempts);
  client.setDefaultMaxTransactionFee(new Hbar(options.defaultMaxTransactionFeeHbar ?? 5));
  return client;
}

/** The node account ids of a client (the ones transactions are frozen for). */
export function clientNodeAccountIds(client: Client): AccountId[] {
  return Object.values(client.network).map((v) => (typeof v === 'string' ? AccountId.fromString(v) : v));
}
