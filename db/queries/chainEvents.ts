/**
 * Queries of the chain event index: chain_events, indexer_checkpoints, indexer_block_hashes
 * (migration 0003). Block numbers are JS numbers (safe far beyond any real chain height).
 */
import type { Sql, TransactionSql } from 'postgres';
import { CHANNELS, notifyChange } from '../notify.js';

export const CHAIN_EVENT_SOURCES = ['passport', 'escrow'] as const;
export type ChainEventSource = (typeof CHAIN_EVENT_SOURCES)[number];

/** How many recent checkpoint hashes each indexer keeps for finding a reorg's common ancestor. */
export const BLOCK_HASH_HISTORY = 512;

export interface ChainEventRow {
  chainId: number;
  source: ChainEventSource;
  contractAddress: string;
  blockNumber: number;
  blockHash: string;
  txHash: string;
  txIndex: number;
  logIndex: number;
  eventName: string;
  /** Decoded arguments, JSON-safe (bigints as decimal strings). */
  args: Record<string, unknown>;
}

/** Item of GET /events (SPEC section 2 "Chain event"). */
export interface ChainEvent {
  blockNumber: number;
  txHash: string;
  eventName: string;
  args: Record<string, unknown>;
  logIndex: number;
  source: ChainEventSource;
}

export interface Checkpoint {
  chainId: number;
  source: ChainEventSource;
  contractAddress: string;
  blockNumber: number;
  blockHash: string | null;
}

type Q = Sql | TransactionSql;

export async function getCheckpoint(sql: Q, chainId: number, source: ChainEventSource): Promise<Checkpoint | undefined> {
  const rows = await sql<{ contract_address: string; block_number: string; block_hash: string | null }[]>`
    SELECT contract_address, block_number, block_hash FROM indexer_checkpoints
    WHERE chain_id = ${chainId} AND source = ${source}`;
  const r = rows[0];
  if (!r) return undefined;
  return { chainId, source, contractAddress: r.contract_address, blockNumber: Number(r.block_number), blockHash: r.block_hash };
}

export interface StoreBatchInput {
  chainId: number;
  source: ChainEventSource;
  contractAddress: string;
  /** Checkpoint block the batch was fetched after (-1 before the first block); the store is refused when another writer moved it. */
  expectedCheckpoint: number;
  events: ChainEventRow[];
  toBlock: number;
  toBlockHash: string;
}

export class CheckpointMovedError extends Error {
  constructor(readonly expected: number, readonly actual: number | undefined) {
    super(`indexer checkpoint moved concurrently (expected ${expected}, found ${actual ?? 'none'})`);
    this.name = 'CheckpointMovedError';
  }
}

const INSERT_CHUNK = 2000;

/**
 * In ONE transaction: upserts the events (unique chain_id, tx_hash, log_index), advances the
 * checkpoint to toBlock/toBlockHash, records that hash and prunes old hashes; when events were
 * written, announces it on CHANNELS.chainEvents.
 */
export async function storeBatch(sql: Sql, input: StoreBatchInput): Promise<{ inserted: number }> {
  return sql.begin(async (tx) => {
    const cur = await tx<{ block_number: string }[]>`
      SELECT block_number FROM indexer_checkpoints
      WHERE chain_id = ${input.chainId} AND source = ${input.source} FOR UPDATE`;
    const actual = cur[0] ? Number(cur[0].block_number) : undefined;
    if ((actual ?? -1) !== input.expectedCheckpoint) throw new CheckpointMovedError(input.expectedCheckpoint, actual);

    let inserted = 0;
    for (let i = 0; i < input.events.length; i += INSERT_CHUNK) {
      const chunk = input.events.slice(i, i + INSERT_CHUNK);
      const res = await tx`
        INSERT INTO chain_events (chain_id, source, contract_address, block_number, block_hash, tx_hash, tx_index, log_index, event_name, args)
        SELECT * FROM unnest(
          ${tx.array(chunk.map((e) => e.chainId))}::int[],
          ${tx.array(chunk.map((e) => e.source))}::text[],
          ${tx.array(chunk.map((e) => e.contractAddress))}::text[],
          ${tx.array(chunk.map((e) => String(e.blockNumber)))}::bigint[],
          ${tx.array(chunk.map((e) => e.blockHash))}::text[],
          ${tx.array(chunk.map((e) => e.txHash))}::text[],
          ${tx.array(chunk.map((e) => e.txIndex))}::int[],
          ${tx.array(chunk.map((e) => e.logIndex))}::int[],
          ${tx.array(chunk.map((e) => e.eventName))}::text[],
          ${tx.array(chunk.map((e) => JSON.stringify(e.args)))}::jsonb[]
        )
        ON CONFLICT (chain_id, tx_hash, log_index) DO UPDATE SET
          source = EXCLUDED.source,
          contract_address = EXCLUDED.contract_address,
          block_number = EXCLUDED.block_number,
          block_hash = EXCLUDED.block_hash,
          tx_index = EXCLUDED.tx_index,
          event_name = EXCLUDED.event_name,
          args = EXCLUDED.args`;
      inserted += res.count;
    }

    await tx`
      INSERT INTO indexer_checkpoints (chain_id, source, contract_address, block_number, block_hash, updated_at)
      VALUES (${input.chainId}, ${input.source}, ${input.contractAddress}, ${input.toBlock}, ${input.toBlockHash}, now())
      ON CONFLICT (chain_id, source) DO UPDATE SET
        contract_address = EXCLUDED.contract_address, block_number = EXCLUDED.block_number,
        block_hash = EXCLUDED.block_hash, updated_at = now()`;
    await tx`
      INSERT INTO indexer_block_hashes (chain_id, source, block_number, block_hash)
      VALUES (${input.chainId}, ${input.source}, ${input.toBlock}, ${input.toBlockHash})
      ON CONFLICT (chain_id, source, block_number) DO UPDATE SET block_hash = EXCLUDED.block_hash`;
    await tx`
      DELETE FROM indexer_block_hashes
      WHERE chain_id = ${input.chainId} AND source = ${input.source}
        AND block_number < (
          SELECT min(block_number) FROM (
            SELECT block_number FROM indexer_block_hashes
            WHERE chain_id = ${input.chainId} AND source = ${input.source}
            ORDER BY block_number DESC LIMIT ${BLOCK_HASH_HISTORY}) recent)`;
    // GET /events answers from a per-query memory cache that this clears (api/routes/events.ts)
    if (inserted > 0) await notifyChange(tx, CHANNELS.chainEvents, input.source);
    return { inserted };
  }) as Promise<{ inserted: number }>;
}

/** Recorded (block number, hash) pairs at or below `atOrBelow`, newest first. */
export async function recentBlockHashes(
  sql: Q,
  chainId: number,
  source: ChainEventSource,
  atOrBelow: number,
  limit = BLOCK_HASH_HISTORY,
): Promise<{ blockNumber: number; blockHash: string }[]> {
  const rows = await sql<{ block_number: string; block_hash: string }[]>`
    SELECT block_number, block_hash FROM indexer_block_hashes
    WHERE chain_id = ${chainId} AND source = ${source} AND block_number <= ${atOrBelow}
    ORDER BY block_number DESC LIMIT ${limit}`;
  return rows.map((r) => ({ blockNumber: Number(r.block_number), blockHash: r.block_hash }));
}

/**
 * Rewinds an indexer to `ancestor` (a block both the index and the chain agree on, or -1/start-1 with
 * a null hash to start over): in one transaction deletes the events and recorded hashes above it and
 * resets the checkpoint. Returns the number of deleted events.
 */
export async function rewindTo(
  sql: Sql,
  chainId: number,
  source: ChainEventSource,
  ancestor: { blockNumber: number; blockHash: string | null },
  expectedCheckpoint: number,
): Promise<{ deleted: number }> {
  return sql.begin(async (tx) => {
    const cur = await tx<{ block_number: string }[]>`
      SELECT block_number FROM indexer_checkpoints WHERE chain_id = ${chainId} AND source = ${source} FOR UPDATE`;
    const actual = cur[0] ? Number(cur[0].block_number) : undefined;
    if ((actual ?? -1) !== expectedCheckpoint) throw new CheckpointMovedError(expectedCheckpoint, actual);
    const del = await tx`
      DELETE FROM chain_events WHERE chain_id = ${chainId} AND source = ${source} AND block_number > ${ancestor.blockNumber}`;
    await tx`
      DELETE FROM indexer_block_hashes WHERE chain_id = ${chainId} AND source = ${source} AND block_number > ${ancestor.blockNumber}`;
    await tx`
      UPDATE indexer_checkpoints SET block_number = ${ancestor.blockNumber}, block_hash = ${ancestor.blockHash}, updated_at = now()
      WHERE chain_id = ${chainId} AND source = ${source}`;
    if (del.count > 0) await notifyChange(tx, CHANNELS.chainEvents, source);
    return { deleted: del.count };
  }) as Promise<{ deleted: number }>;
}

export interface ListEventsFilter {
  chainId?: number;
  eventName?: string;
  source?: ChainEventSource;
  fromBlock?: number;
  toBlock?: number;
  limit: number;
  offset: number;
}

/** Events matching the filter, ordered by block then log index, with the total matching count. */
export async function listEvents(sql: Q, f: ListEventsFilter): Promise<{ events: ChainEvent[]; total: number }> {
  const conds = [
    f.chainId !== undefined ? sql`chain_id = ${f.chainId}` : sql`TRUE`,
    f.eventName !== undefined ? sql`event_name = ${f.eventName}` : sql`TRUE`,
    f.source !== undefined ? sql`source = ${f.source}` : sql`TRUE`,
    f.fromBlock !== undefined ? sql`block_number >= ${f.fromBlock}` : sql`TRUE`,
    f.toBlock !== undefined ? sql`block_number <= ${f.toBlock}` : sql`TRUE`,
  ];
  const where = conds.reduce((acc, c) => sql`${acc} AND ${c}`);
  const [rows, count] = await Promise.all([
    sql<{ block_number: string; tx_hash: string; event_name: string; args: Record<string, unknown>; log_index: number; source: ChainEventSource }[]>`
      SELECT block_number, tx_hash, event_name, args, log_index, source FROM chain_events
      WHERE ${where}
      ORDER BY block_number, log_index, chain_id
      LIMIT ${f.limit} OFFSET ${f.offset}`,
    sql<{ total: string }[]>`SELECT count(*) AS total FROM chain_events WHERE ${where}`,
  ]);
  return {
    events: rows.map((r) => ({
      blockNumber: Number(r.block_number),
      txHash: r.tx_hash,
      eventName: r.event_name,
      args: r.args,
      logIndex: r.log_index,
      source: r.source,
    })),
    total: Number(count[0]?.total ?? 0),
  };
}

/** Number of stored events of one indexer (for tests and ops). */
export async function countEvents(sql: Q, chainId: number, source?: ChainEventSource): Promise<number> {
  const rows = source
    ? await sql<{ n: string }[]>`SELECT count(*) AS n FROM chain_events WHERE chain_id = ${chainId} AND source = ${source}`
    : await sql<{ n: string }[]>`SELECT count(*) AS n FROM chain_events WHERE chain_id = ${chainId}`;
  return Number(rows[0]?.n ?? 0);
}
