/**
 * Starts the chainIndexer workflows (one per configured contract source) if they are not running.
 * Idempotent: the workflow id indexer:{chainId}:{source} is the business id, and an existing run is
 * kept (USE_EXISTING). Called by the worker at start-up.
 */
import type { Client } from '@temporalio/client';
import { WorkflowIdConflictPolicy } from '@temporalio/common';
import type { Config } from '../../config/index.js';
import { startWorkflow } from '../../temporal/workflows.js';
import { chainIndexerContract, chainIndexerWorkflowId } from '../../workflows/contracts/chainIndexer.js';
import { indexerSourcesFromConfig } from './index.js';

export async function ensureChainIndexers(
  client: Client,
  config: Config,
  opts: { taskQueue?: string; pollIntervalMs?: number } = {},
): Promise<string[]> {
  const ids: string[] = [];
  if (!config.EVM_RPC_URL) return ids;
  for (const s of indexerSourcesFromConfig(config)) {
    const workflowId = chainIndexerWorkflowId(s.chainId, s.source);
    await startWorkflow(client, chainIndexerContract, { chainId: s.chainId, source: s.source, pollIntervalMs: opts.pollIntervalMs ?? config.INDEXER_POLL_INTERVAL_MS }, {
      taskQueue: opts.taskQueue ?? config.TEMPORAL_TASK_QUEUE,
      workflowId,
      workflowIdConflictPolicy: WorkflowIdConflictPolicy.USE_EXISTING,
    });
    ids.push(workflowId);
  }
  return ids;
}

/**
 * Worker start-up helper: connects a client, ensures the indexers run, closes the client. Never
 * throws (logs instead), so a Temporal hiccup at start-up does not stop the worker.
 */
export function startChainIndexersOnce(config: Config, log: (line: string) => void = (l) => console.log(l)): void {
  if (!config.EVM_RPC_URL || indexerSourcesFromConfig(config).length === 0) return;
  void (async () => {
    const { createTemporalClient } = await import('../../temporal/client.js');
    const client = await createTemporalClient(config);
    try {
      const ids = await ensureChainIndexers(client, config);
      log(`chain indexers running: ${ids.join(', ')}`);
    } finally {
      await client.connection.close();
    }
  })().catch((err: unknown) => log(`chain indexers not started: ${err instanceof Error ? err.message : String(err)}`));
}
