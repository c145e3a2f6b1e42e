/**
 * The open tasks as each API process holds them in memory (DESIGN.md section 10, "Caches across
 * instances"): a db/liveCache of the tasks projection's open rows (posted, claimed, delivered; full
 * load on start and on every reconnect of the LISTEN connection, one row reloaded per NOTIFY
 * task_changed). A task that completes or is cancelled leaves the memory (issue 20 item 2: memory is
 * bounded by the open tasks, which the posting caps bound); reads of a closed task fall back to
 * PostgreSQL (api/market/updates.ts readTask), and so do lists that can include closed tasks (no status filter, or
 * completed / cancelled). Lists of open tasks are answered from a sorted array of the records (newest
 * first: task ids are UUIDv7, so descending id order is creation order), rebuilt lazily after a change.
 */
import type { Sql } from 'postgres';
import { startLiveCache, type LiveCache } from '../../db/liveCache.js';
import { CHANNELS } from '../../db/notify.js';
import { findOpenTask, listOpenTasks, pageTasks } from '../../db/queries/marketTasks.js';
import { isOpenStatus, type TaskRecord, type TaskStatus } from '../../domain/market.js';
import { ApiError } from '../errors.js';

export interface TaskFilter {
  capability?: string;
  status?: TaskStatus;
  posterDid?: string;
  claimerDid?: string;
}

export class TaskBook {
  private cache: LiveCache<TaskRecord> | null = null;
  private sorted: TaskRecord[] | null = null;

  constructor(readonly sql: Sql, private readonly onError: (err: unknown) => void = () => {}) {}

  /** Starts the cache on first use (the app's onClose hook closes it). */
  private started(): LiveCache<TaskRecord> {
    if (!this.cache) {
      this.cache = startLiveCache<TaskRecord>(
        this.sql,
        {
          name: 'tasks',
          channel: CHANNELS.task,
          keyOf: (t) => t.taskId,
          loadAll: (db) => listOpenTasks(db),
          loadKey: (db, id) => findOpenTask(db, id),
        },
        { onError: this.onError },
      );
      this.cache.onChange(() => {
        this.sorted = null;
      });
    }
    return this.cache;
  }

  async ready(): Promise<void> {
    try {
      await this.started().whenReady();
    } catch {
      throw new ApiError('service_unavailable', 'The task list is still loading', { hint: 'Retry after 30 seconds' });
    }
  }

  get(taskId: string): TaskRecord | undefined {
    return this.started().get(taskId.toLowerCase());
  }

  /** Every open task, newest first. A new array after each change, never mutated (GET /api/search and GET /feed key on it). */
  all(): readonly TaskRecord[] {
    if (!this.sorted) this.sorted = [...this.started().values()].sort((a, b) => (a.taskId < b.taskId ? 1 : a.taskId > b.taskId ? -1 : 0));
    return this.sorted;
  }

  /**
   * A page of the tasks matching the filter, newest first, and how many match: from memory when the
   * filter asks for an open status, else from PostgreSQL (closed tasks are not held here).
   */
  async page(filter: TaskFilter, limit: number, offset: number): Promise<{ tasks: TaskRecord[]; total: number }> {
    if (!filter.status || !isOpenStatus(filter.status)) return pageTasks(this.sql, filter, limit, offset);
    return this.openPage(filter, limit, offset);
  }

  /** A page of the open tasks in memory. */
  openPage(filter: TaskFilter, limit: number, offset: number): { tasks: TaskRecord[]; total: number } {
    const all = this.all();
    const match = (t: TaskRecord) =>
      (!filter.capability || t.capabilities.includes(filter.capability)) &&
      (!filter.status || t.status === filter.status) &&
      (!filter.posterDid || t.posterDid === filter.posterDid) &&
      (!filter.claimerDid || t.claimerDid === filter.claimerDid);
    const hits = filter.capability || filter.status || filter.posterDid || filter.claimerDid ? all.filter(match) : all;
    return { tasks: hits.slice(offset, offset + limit), total: hits.length };
  }

  async close(): Promise<void> {
    await this.cache?.close();
    this.cache = null;
  }
}
