/**
 * The chain indexer activity: one call indexes the next block range of one contract source.
 *
 *   1. reorg check: the stored checkpoint hash must equal the chain's hash at that height; if not,
 *      walk back through the recorded hashes to the common ancestor, delete the events above it and
 *      reset the checkpoint (the next call re-indexes from there);
 *   2. safe head = head - confirmations; range = [checkpoint+1, min(checkpoint+maxRange, safe)];
 *   3. eth_getLogs for the range, halving it while the RPC refuses a large range;
 *   4. decode with the contract ABI; in ONE database transaction upsert the events and advance the
 *      checkpoint (block number + block hash).
 *
 * Retries are Temporal's: any RPC outage throws, and the next attempt starts again from the stored
 * checkpoint, so there are no gaps and (unique (chain_id, tx_hash, log_index)) no duplicates.
 */
import {
  BaseError,
  decodeEventLog,
  HttpRequestError,
  toEventSelector,
  type AbiEvent,
  RpcRequestError,
  TimeoutError,
  type Abi,
  type Address,
  type Hex,
  type Log,
} from 'viem';
import type { Sql } from 'postgres';
import { agentPassportAbi, taskEscrowAbi } from '../../evm/abis.js';
import type { EvmPublicClient } from '../../evm/clients.js';
import {
  CheckpointMovedError,
  getCheckpoint,
  recentBlockHashes,
  rewindTo,
  storeBatch,
  type ChainEventRow,
  type ChainEventSource,
} from '../../db/queries/chainEvents.js';

export type { ChainEventSource } from '../../db/queries/chainEvents.js';

export const SOURCE_ABIS: Record<ChainEventSource, Abi> = {
  passport: agentPassportAbi as Abi,
  escrow: taskEscrowAbi as Abi,
};

/** One indexed contract on one chain. */
export interface IndexerSource {
  chainId: number;
  source: ChainEventSource;
  address: Address;
  /** First block to index (e.g. the deployment block); default 0. */
  startBlock?: number;
  /** ABI used for decoding; default SOURCE_ABIS[source]. */
  abi?: Abi;
}

export interface IndexerDeps {
  sql: Sql;
  /** viem public client per chain id. */
  clients: Record<number, EvmPublicClient> | ((chainId: number) => EvmPublicClient);
  sources: IndexerSource[];
  /** Blocks behind the head that are considered final; default 2. */
  confirmations?: number;
  /** Largest block range per getLogs; default 2000. */
  maxBlockRange?: number;
}

export interface FetchAndStoreInput {
  chainId: number;
  source: ChainEventSource;
  /** Range to try first (the workflow passes back nextRange); capped by deps.maxBlockRange. */
  blockRange?: number;
  /** Overrides deps.confirmations. */
  confirmations?: number;
}

export interface FetchAndStoreResult {
  /** Checkpoint after the call (-1 / startBlock-1 when nothing is indexed yet). */
  checkpoint: number;
  safeHead: number;
  /** Indexed range, absent when nothing was fetched. */
  fromBlock?: number;
  toBlock?: number;
  /** Events decoded and stored in this call. */
  events: number;
  /** Logs of the contract that did not match its ABI (skipped). */
  undecoded: number;
  /** True when the checkpoint reached the safe head. */
  caughtUp: boolean;
  /** Range the next call should try (grows back after a refusal). */
  nextRange: number;
  /** Present when a reorg was repaired in this call (no range was fetched then). */
  reorg?: { fromCheckpoint: number; ancestor: number; deletedEvents: number };
}

/** Converts decoded viem values into JSON: bigint -> decimal string, arrays and objects recursively. */
export function toJsonSafe(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString(10);
  if (Array.isArray(value)) return value.map(toJsonSafe);
  if (value instanceof Uint8Array) return `0x${Buffer.from(value).toString('hex')}`;
  if (value && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, toJsonSafe(v)]));
  }
  return value;
}

const eventsByTopic = new WeakMap<Abi, Map<string, Abi>>();

/** topic0 -> a one-event ABI, built once per ABI, so decodeEventLog does not hash every signature per log. */
function eventIndex(abi: Abi): Map<string, Abi> {
  let m = eventsByTopic.get(abi);
  if (!m) {
    m = new Map();
    for (const item of abi) {
      if (item.type === 'event' && !item.anonymous) m.set(toEventSelector(item as AbiEvent).toLowerCase(), [item]);
    }
    eventsByTopic.set(abi, m);
  }
  return m;
}

/** Decodes raw logs of one source into rows; logs the ABI does not know are counted and skipped. */
export function decodeLogs(
  src: { chainId: number; source: ChainEventSource; abi: Abi },
  logs: readonly Log[],
): { rows: ChainEventRow[]; undecoded: number } {
  const rows: ChainEventRow[] = [];
  const index = eventIndex(src.abi);
  let undecoded = 0;
  for (const log of logs) {
    if (log.removed || log.blockNumber === null || log.transactionHash === null || log.logIndex === null) continue;
    const abi = log.topics[0] ? index.get(log.topics[0].toLowerCase()) : undefined;
    let decoded: { eventName: string; args: unknown };
    try {
      if (!abi) throw new Error('unknown event');
      decoded = decodeEventLog({ abi, data: log.data, topics: log.topics as [Hex, ...Hex[]], strict: true }) as never;
    } catch {
      undecoded++;
      continue;
    }
    rows.push({
      chainId: src.chainId,
      source: src.source,
      contractAddress: log.address.toLowerCase(),
      blockNumber: Number(log.blockNumber),
      blockHash: log.blockHash!,
      txHash: log.transactionHash,
      txIndex: log.transactionIndex ?? 0,
      logIndex: log.logIndex,
      eventName: decoded.eventName,
      args: (toJsonSafe(decoded.args ?? {}) ?? {}) as Record<string, unknown>,
    });
  }
  return { rows, undecoded };
}

/** True for failures where asking for fewer blocks may help (the RPC answered, but refused). */
export function isRangeRefusal(err: unknown): boolean {
  // the answer was bigger than the client accepts (viem's 10 MiB limit): fewer blocks, smaller answer
  if (err instanceof BaseError && err.walk((e) => (e as Error).name === 'ResponseBodyTooLargeError')) return true;
  if (err instanceof TimeoutError) return true;
  if (err instanceof RpcRequestError) return true; // a JSON-RPC error object: limit exceeded, too many results, ...
  if (err instanceof HttpRequestError) {
    // a reachable server answering 413/400/5xx with a body; no status means the server is down
    return err.status === 413 || err.status === 400;
  }
  const msg = err instanceof Error ? err.message : String(err);
  return /range|too many|limit|exceed|too large|10000 results/i.test(msg) && !/fetch failed|ECONNREFUSED/i.test(msg);
}

/**
 * getLogs over [from, to], halving the range while the RPC refuses it. Returns the logs and the last
 * block actually covered (may be below `to`).
 */
export async function getLogsAdaptive(
  client: EvmPublicClient,
  address: Address,
  from: number,
  to: number,
): Promise<{ logs: Log[]; toBlock: number; range: number }> {
  let end = to;
  for (;;) {
    try {
      const logs = await client.getLogs({ address, fromBlock: BigInt(from), toBlock: BigInt(end) });
      return { logs: logs as Log[], toBlock: end, range: end - from + 1 };
    } catch (err) {
      if (end > from && isRangeRefusal(err)) {
        end = from + Math.floor((end - from + 1) / 2) - 1;
        continue;
      }
      throw err;
    }
  }
}

async function blockHashAt(client: EvmPublicClient, n: number): Promise<Hex | null> {
  try {
    const block = await client.getBlock({ blockNumber: BigInt(n) });
    return block.hash;
  } catch (err) {
    if (err instanceof Error && err.name === 'BlockNotFoundError') return null;
    throw err;
  }
}

/** Events per call above which the range is not grown any further. */
export const TARGET_EVENTS_PER_CALL = 5_000;

export function createIndexerActivities(deps: IndexerDeps) {
  const maxRange = deps.maxBlockRange ?? 2000;
  const clientFor = (chainId: number): EvmPublicClient => {
    const c = typeof deps.clients === 'function' ? deps.clients(chainId) : deps.clients[chainId];
    if (!c) throw new Error(`no EVM client for chain ${chainId}`);
    return c;
  };
  const sourceFor = (chainId: number, source: ChainEventSource): IndexerSource => {
    const s = deps.sources.find((x) => x.chainId === chainId && x.source === source);
    if (!s) throw new Error(`indexer source ${source} on chain ${chainId} is not configured`);
    return s;
  };

  /** Finds the newest recorded block on which index and chain agree; null when none is left. */
  async function findAncestor(client: EvmPublicClient, chainId: number, source: ChainEventSource, below: number) {
    let cursor = below;
    for (;;) {
      const recorded = await recentBlockHashes(deps.sql, chainId, source, cursor, 64);
      if (recorded.length === 0) return null;
      for (const r of recorded) {
        if ((await blockHashAt(client, r.blockNumber)) === r.blockHash) return r;
      }
      cursor = recorded[recorded.length - 1]!.blockNumber - 1;
    }
  }

  async function fetchAndStore(input: FetchAndStoreInput): Promise<FetchAndStoreResult> {
    const src = sourceFor(input.chainId, input.source);
    const client = clientFor(input.chainId);
    const confirmations = input.confirmations ?? deps.confirmations ?? 2;
    const startBlock = src.startBlock ?? 0;
    const range = Math.max(1, Math.min(input.blockRange ?? maxRange, maxRange));

    const cp = await getCheckpoint(deps.sql, input.chainId, input.source);
    const checkpoint = cp ? cp.blockNumber : startBlock - 1;

    // 1. reorg check
    if (cp && cp.blockHash) {
      const onChain = await blockHashAt(client, checkpoint);
      if (onChain !== cp.blockHash) {
        const ancestor = await findAncestor(client, input.chainId, input.source, checkpoint - 1);
        const target = ancestor ?? { blockNumber: startBlock - 1, blockHash: null };
        const { deleted } = await rewindTo(deps.sql, input.chainId, input.source, target, checkpoint);
        return {
          checkpoint: target.blockNumber,
          safeHead: checkpoint,
          events: 0,
          undecoded: 0,
          caughtUp: false,
          nextRange: range,
          reorg: { fromCheckpoint: checkpoint, ancestor: target.blockNumber, deletedEvents: deleted },
        };
      }
    }

    // 2. safe head and range
    const head = Number(await client.getBlockNumber({ cacheTime: 0 }));
    const safeHead = head - confirmations;
    if (safeHead <= checkpoint) {
      return { checkpoint, safeHead, events: 0, undecoded: 0, caughtUp: true, nextRange: range };
    }
    const from = checkpoint + 1;
    const to = Math.min(checkpoint + range, safeHead);

    // 3. logs (the hash of the last block is read before and after, so a reorg racing the read is seen)
    const hashBefore = await blockHashAt(client, to);
    const got = await getLogsAdaptive(client, src.address, from, to);
    const toHash = got.toBlock === to ? hashBefore : await blockHashAt(client, got.toBlock);
    const hashAfter = await blockHashAt(client, got.toBlock);
    if (!toHash || toHash !== hashAfter) throw new Error(`chain changed while reading blocks ${from}-${got.toBlock}; retrying`);

    // 4. decode and store in one transaction
    const { rows, undecoded } = decodeLogs({ chainId: input.chainId, source: input.source, abi: src.abi ?? SOURCE_ABIS[input.source] }, got.logs);
    try {
      await storeBatch(deps.sql, {
        chainId: input.chainId,
        source: input.source,
        contractAddress: src.address.toLowerCase(),
        expectedCheckpoint: cp ? checkpoint : -1,
        events: rows,
        toBlock: got.toBlock,
        toBlockHash: toHash,
      });
    } catch (err) {
      if (err instanceof CheckpointMovedError) {
        // another attempt already advanced the checkpoint: nothing lost, the next call continues from it
        const now = await getCheckpoint(deps.sql, input.chainId, input.source);
        return { checkpoint: now?.blockNumber ?? checkpoint, safeHead, events: 0, undecoded: 0, caughtUp: false, nextRange: range };
      }
      throw err;
    }
    const refused = got.range < to - from + 1;
    // grow back after a refusal only while batches stay small, so dense ranges do not oscillate
    // between a refused large range and an accepted small one
    return {
      checkpoint: got.toBlock,
      safeHead,
      fromBlock: from,
      toBlock: got.toBlock,
      events: rows.length,
      undecoded,
      caughtUp: got.toBlock >= safeHead,
      nextRange: refused ? got.range : rows.length > TARGET_EVENTS_PER_CALL / 2 ? range : Math.min(maxRange, range * 2),
    };
  }

  return { fetchAndStore };
}

export type IndexerActivities = ReturnType<typeof createIndexerActivities>;
