/**
 * Contract of chainIndexer (workflows/chainIndexer.ts): one endless run per configured contract
 * source, started by the worker at start-up (activities/evm/indexerControl.ts).
 */
import type { ChainEventSource } from '../../db/queries/chainEvents.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** indexer:{chainId}:{source} */
export function chainIndexerWorkflowId(chainId: number, source: ChainEventSource): string {
  return `indexer:${chainId}:${source}`;
}

export interface ChainIndexerInput extends Bound {
  chainId: number;
  source: ChainEventSource;
  /** Sleep between polls once caught up; default 2000 ms. */
  pollIntervalMs?: number;
  /** Iterations before continue-as-new; default 500. */
  iterationsPerRun?: number;
  /** Confirmations override (else the worker's INDEXER_CONFIRMATIONS). */
  confirmations?: number;
  /** Block range to start with (else the worker's INDEXER_MAX_BLOCK_RANGE). */
  blockRange?: number;
  /** Activity retry backoff; defaults 1 s initial, 30 s maximum. */
  retryInitialIntervalMs?: number;
  retryMaximumIntervalMs?: number;
  /** Stop after this many iterations in total (tests and one-shot backfills); default endless. */
  maxIterations?: number;
  /** Carried across continue-as-new. */
  state?: { iterations: number; events: number };
}

export interface ChainIndexerResult {
  iterations: number;
  events: number;
}

export const chainIndexerContract = workflowContract<ChainIndexerInput, ChainIndexerResult>()({
  type: 'chainIndexer',
  workflowId: chainIndexerWorkflowId,
});
