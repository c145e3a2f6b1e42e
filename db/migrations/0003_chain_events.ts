/**
 * Chain events of the EVM contracts (passport, escrow), the indexer checkpoints and the recent block
 * hashes the indexer uses to find the common ancestor after a reorg.
 */
import type { Sql } from 'postgres';

export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    CREATE TABLE IF NOT EXISTS chain_events (
      id               bigserial PRIMARY KEY,
      chain_id         integer     NOT NULL,
      source           text        NOT NULL CHECK (source IN ('passport', 'escrow')),
      contract_address text        NOT NULL,
      block_number     bigint      NOT NULL,
      block_hash       text        NOT NULL,
      tx_hash          text        NOT NULL,
      tx_index         integer     NOT NULL,
      log_index        integer     NOT NULL,
      event_name       text        NOT NULL,
      args             jsonb       NOT NULL,
      indexed_at       timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT chain_events_log_unique UNIQUE (chain_id, tx_hash, log_index)
    );
    CREATE INDEX IF NOT EXISTS chain_events_order_idx  ON chain_events (chain_id, block_number, log_index);
    CREATE INDEX IF NOT EXISTS chain_events_source_idx ON chain_events (chain_id, source, block_number, log_index);
    CREATE INDEX IF NOT EXISTS chain_events_name_idx   ON chain_events (chain_id, event_name, block_number, log_index);

    CREATE TABLE IF NOT EXISTS indexer_checkpoints (
      chain_id         integer     NOT NULL,
      source           text        NOT NULL,
      contract_address text        NOT NULL,
      block_number     bigint      NOT NULL,
      block_hash       text,
      updated_at       timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (chain_id, source)
    );

    CREATE TABLE IF NOT EXISTS indexer_block_hashes (
      chain_id     integer NOT NULL,
      source       text    NOT NULL,
      block_number bigint  NOT NULL,
      block_hash   text    NOT NULL,
      PRIMARY KEY (chain_id, source, block_number)
    );
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`
    DROP TABLE IF EXISTS indexer_block_hashes;
    DROP TABLE IF EXISTS indexer_checkpoints;
    DROP TABLE IF EXISTS chain_events;
  `);
}
