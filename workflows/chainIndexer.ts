/**
 * chainIndexer (id `indexer:{chainId}:{source}`): endless loop of fetchAndStore, one block range per
 * activity call; sleeps pollIntervalMs (a workflow timer) when caught up; continue-as-new every
 * `iterationsPerRun` iterations (or when Temporal suggests it) so history stays small. An RPC or
 * database outage only makes the activity retry with bounded backoff: the checkpoint lives in the
 * database, so there are no gaps and no duplicates.
 */
import { continueAsNew, proxyActivities, sleep, workflowInfo } from '@temporalio/workflow';
import type { IndexerActivities } from '../activities/evm/indexer.js';
import type { ChainIndexerInput, ChainIndexerResult } from './contracts/chainIndexer.js';
import { HEARTBEAT_TIMEOUT_MS } from './activityOptions.js';
import { requireBoundStart } from './binding.js';

export async function chainIndexer(input: ChainIndexerInput): Promise<ChainIndexerResult> {
  requireBoundStart(input, 'chainIndexer'); // an input written for another workflow starts nothing (issue 26)
  const { fetchAndStore } = proxyActivities<IndexerActivities>({
    startToCloseTimeout: '2 minutes',
    // a SIGKILLed worker's attempt is retried after this (the keep-alive heartbeats every activity)
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
    retry: {
      initialInterval: input.retryInitialIntervalMs ?? 1_000,
      maximumInterval: input.retryMaximumIntervalMs ?? 30_000,
      backoffCoefficient: 2,
      // no maximumAttempts: unlimited, an outage just retries until the RPC or database is back
    },
  });

  const pollIntervalMs = input.pollIntervalMs ?? 2_000;
  const perRun = input.iterationsPerRun ?? 500;
  let iterations = input.state?.iterations ?? 0;
  let events = input.state?.events ?? 0;
  let blockRange = input.blockRange;

  for (let i = 0; i < perRun; i++) {
    if (input.maxIterations !== undefined && iterations >= input.maxIterations) return { iterations, events };
    const r = await fetchAndStore({
      chainId: input.chainId,
      source: input.source,
      blockRange,
      confirmations: input.confirmations,
    });
    iterations++;
    events += r.events;
    blockRange = r.nextRange;
    if (r.caughtUp) await sleep(pollIntervalMs);
    if (workflowInfo().continueAsNewSuggested) break;
  }
  if (input.maxIterations !== undefined && iterations >= input.maxIterations) return { iterations, events };
  return continueAsNew<typeof chainIndexer>({ ...input, blockRange, state: { iterations, events } });
}
