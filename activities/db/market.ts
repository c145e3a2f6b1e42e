/**
 * The tasks projection activity of the taskLifecycle workflow: writes the task as of a step and
 * announces it (NOTIFY task_changed) in one transaction; a step already written (or a later one)
 * is left as it is, so a retried activity is harmless.
 */
import type { Sql } from 'postgres';
import type { TaskRecord } from '../../domain/market.js';
import { upsertTask } from '../../db/queries/marketTasks.js';

export function createMarketDbActivities(deps: { sql: Sql }) {
  /** `step`: the step's topic message type and reason, which names the event the parties are told (issue 28) */
  async function projectTask(input: { task: TaskRecord; seq: number; step?: { type: string; reason?: string } | null }): Promise<{ written: boolean }> {
    return { written: await upsertTask(deps.sql, input.task, input.seq, input.step ?? null) };
  }
  return { projectTask };
}

export type MarketDbActivities = ReturnType<typeof createMarketDbActivities>;
