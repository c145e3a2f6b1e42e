/**
 * The tasks projection activity of the taskLifecycle workflow: writes the task as of a step and
 * announces it (NOTIFY task_changed) in one transaction; a step already written (or a later one)
 * is left as it is, so a retried activity is harmless.
 */
import type { Sql } from 'postgres';
import type { TaskRecord } from '../../domain/market.js';
import { upsertTask } from '../../db/queries/marketTasks.js';

export function createMarketDbActivities(deps: { sql: Sql }) {
  async function projectTask(input: { task: TaskRecord; seq: number }): Promise<{ written: boolean }> {
    return { written: await upsertTask(deps.sql, input.task, input.seq) };
  }
  return { projectTask };
}

export type MarketDbActivities = ReturnType<typeof createMarketDbActivities>;
