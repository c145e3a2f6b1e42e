/**
 * The tasks as each API process holds them in memory (DESIGN.md sections 10 "Caches across
 * instances" and 12 "Reads at scale"): a db/liveCache of the tasks projection (full load on start and
 * on every reconnect of the LISTEN connection, one row reloaded per NOTIFY task_changed, everything
 * on NOTIFY '*') holding
 *
 *  - every open task (posted, claimed, delivered: the posting caps bound them), and
 *  - the newest `closedInMemory` (MARKET_CLOSED_IN_MEMORY) tasks of each closed status (completed,
 *    cancelled): the window of that status. Its boundary is the smallest id held: every task of the
 *    status at or above it is held, none below. Tasks that close join the window (they are the
 *    newest, or sit above the boundary); when a window grows to twice the bound the oldest half
 *    leaves memory and the boundary moves up.
 *
 * Beside the rows it keeps how many tasks of each closed status lie below the boundary (in all and
 * per capability), loaded in the same snapshot and moved when a task leaves or skips the window, so
 * every list total is a sum of memory counts: no count query per request.
 *
 * GET /market/tasks answers from memory any page of an open status (with any filter), and the pages
 * of the other lists (no status, a closed status; with or without a capability) that lie within the
 * tasks held above every boundary; a deeper page, or a closed list filtered by poster or claimer,
 * reads PostgreSQL. Task ids are UUIDv7, so descending id order is creation order (newest first).
 * Lists are sorted arrays of the records, rebuilt lazily after a change.
 */
import type { Sql } from 'postgres';
import { startLiveCache, type LiveCache } from '../../db/liveCache.js';
import { CHANNELS } from '../../db/notify.js';
import { findTask, loadTaskWindow, pageTaskRecords, pageTasks } from '../../db/queries/marketTasks.js';
import { isOpenStatus, TASK_STATUSES, type TaskRecord, type TaskStatus } from '../../domain/market.js';
import { ApiError } from '../errors.js';

export interface TaskFilter {
  capability?: string;
  status?: TaskStatus;
  posterDid?: string;
  claimerDid?: string;
}

/** Default of MARKET_CLOSED_IN_MEMORY: closed tasks held per closed status. */
export const CLOSED_IN_MEMORY = 2_000;

const CLOSED_STATUSES: readonly TaskStatus[] = TASK_STATUSES.filter((s) => !isOpenStatus(s));

/** Count key of a status and an optional capability. */
const countKey = (status: TaskStatus, capability?: string | null) => `${status}|${capability ?? ''}`;

/** What is known about the tasks that are not held: per closed status, the boundary and how many lie below it. */
interface Window {
  boundaries: Map<TaskStatus, string>;
  /** countKey -> tasks below the boundary */
  below: Map<string, number>;
}

const newestFirst = (a: TaskRecord, b: TaskRecord) => (a.taskId < b.taskId ? 1 : a.taskId > b.taskId ? -1 : 0);

/** The sorted views of the held tasks, rebuilt after a change. */
interface Views {
  /** every held task, newest first */
  held: TaskRecord[];
  /** the open tasks, newest first (search and the feed key on this array's identity) */
  open: TaskRecord[];
  /** the highest boundary: every task (any status) at or above it is held */
  floor: string | null;
  /** filtered lists, by `${status}|${capability}` ('' for none) */
  lists: Map<string, TaskRecord[]>;
}

export class TaskBook {
  private cache: LiveCache<TaskRecord> | null = null;
  private views: Views | null = null;
  private window: Window = { boundaries: new Map(), below: new Map() };
  /** the window each full load came with, by its records array (adopted when the cache takes them) */
  private readonly loaded = new WeakMap<readonly TaskRecord[], Window>();
  /** tasks loadKey found closed below their status's boundary (so not held): counted below when they leave memory */
  private readonly closedBelow = new Map<string, TaskRecord>();
  /** closed tasks held per status (what trimming bounds) */
  private readonly closedHeld = new Map<TaskStatus, number>();
  private trimQueued = false;

  constructor(
    readonly sql: Sql,
    private readonly onError: (err: unknown) => void = () => {},
    /** closed tasks held per closed status (MARKET_CLOSED_IN_MEMORY) */
    readonly closedInMemory = CLOSED_IN_MEMORY,
  ) {}

  /** Starts the cache on first use (the app's onClose hook closes it). */
  private started(): LiveCache<TaskRecord> {
    if (!this.cache) {
      this.cache = startLiveCache<TaskRecord>(
        this.sql,
        {
          name: 'tasks',
          channel: CHANNELS.task,
          keyOf: (t) => t.taskId,
          loadAll: async (db) => {
            const w = await loadTaskWindow(db, CLOSED_STATUSES, this.closedInMemory);
            const below = new Map<string, number>();
            for (const b of w.below) below.set(countKey(b.status, b.capability), b.count);
            this.loaded.set(w.records, { boundaries: new Map(Object.entries(w.boundaries) as [TaskStatus, string][]), below });
            return w.records;
          },
          afterLoadAll: (records) => {
            const w = this.loaded.get(records);
            if (w) this.window = w;
            this.closedBelow.clear();
          },
          loadKey: async (db, id) => {
            const task = (await findTask(db, id))?.record ?? null;
            if (!task || this.holds(task)) return task;
            this.closedBelow.set(id, task);
            return null;
          },
        },
        { onError: this.onError },
      );
      this.cache.onChange((key, before, after) => {
        this.views = null;
        const closed = this.closedBelow.get(key);
        this.closedBelow.delete(key);
        // a held task that closed below its status's boundary leaves memory: it is counted below now
        if (closed && before !== undefined && after === undefined) this.countBelow(closed, 1);
        if (before && !isOpenStatus(before.status)) this.closedHeld.set(before.status, (this.closedHeld.get(before.status) ?? 0) - 1);
        if (after && !isOpenStatus(after.status)) this.closedHeld.set(after.status, (this.closedHeld.get(after.status) ?? 0) + 1);
        // memory stays bounded even when nobody reads: a window past twice its bound is trimmed soon after the change
        if (after && !isOpenStatus(after.status) && (this.closedHeld.get(after.status) ?? 0) > 2 * this.closedInMemory && !this.trimQueued) {
          this.trimQueued = true;
          setImmediate(() => {
            this.trimQueued = false;
            if (this.cache) this.trimWindows(this.cache);
          });
        }
      });
    }
    return this.cache;
  }

  /** Whether a task belongs in memory: open, or closed at or above its status's boundary. */
  private holds(task: TaskRecord): boolean {
    if (isOpenStatus(task.status)) return true;
    const boundary = this.window.boundaries.get(task.status);
    return boundary === undefined || task.taskId >= boundary;
  }

  private countBelow(task: TaskRecord, n: number) {
    const below = this.window.below;
    for (const key of [countKey(task.status), ...task.capabilities.map((c) => countKey(task.status, c))]) below.set(key, (below.get(key) ?? 0) + n);
  }

  async ready(): Promise<void> {
    try {
      await this.started().whenReady();
    } catch {
      throw new ApiError('service_unavailable', 'The task list is still loading', { hint: 'Retry after 30 seconds' });
    }
  }

  /** A held task (open, or closed and recent); undefined otherwise (readers fall back to PostgreSQL). */
  get(taskId: string): TaskRecord | undefined {
    return this.started().get(taskId.toLowerCase());
  }

  /** Every open task, newest first. A new array after each change, never mutated (GET /api/search and GET /feed key on it). */
  all(): readonly TaskRecord[] {
    return this.current().open;
  }

  /** Moves on every change of what the book holds (answers made from it may be kept until it moves). */
  get version(): number {
    return this.started().version;
  }

  /** Tasks held in memory (open and recent closed ones). */
  get size(): number {
    return this.started().size;
  }

  /** The sorted views, after moving windows that outgrew twice their bound. */
  private current(): Views {
    if (this.views) return this.views;
    const cache = this.started();
    this.trimWindows(cache);
    const held = [...cache.values()].sort(newestFirst);
    let floor: string | null = null;
    for (const b of this.window.boundaries.values()) if (floor === null || b > floor) floor = b;
    const views: Views = { held, open: held.filter((t) => isOpenStatus(t.status)), floor, lists: new Map() };
    // trimming emitted changes (which cleared this.views): these views are the ones after them
    this.views = views;
    return views;
  }

  /** Drops the oldest closed tasks of a status held beyond twice the bound, keeping the newest `closedInMemory`. */
  private trimWindows(cache: LiveCache<TaskRecord>) {
    const byStatus = new Map<TaskStatus, TaskRecord[]>();
    for (const t of cache.values()) {
      if (isOpenStatus(t.status)) continue;
      let list = byStatus.get(t.status);
      if (!list) byStatus.set(t.status, (list = []));
      list.push(t);
    }
    for (const [status, list] of byStatus) {
      const boundary = this.window.boundaries.get(status);
      // a reload that raced a trim may hold a task below the boundary again: it is counted below already
      for (const t of list) if (boundary !== undefined && t.taskId < boundary) cache.drop(t.taskId);
      const kept = boundary === undefined ? list : list.filter((t) => t.taskId >= boundary);
      if (kept.length <= 2 * this.closedInMemory) continue;
      kept.sort(newestFirst);
      const leaving = kept.slice(this.closedInMemory);
      this.window.boundaries.set(status, kept[this.closedInMemory - 1]!.taskId);
      for (const t of leaving) {
        this.countBelow(t, 1);
        cache.drop(t.taskId);
      }
    }
  }

  /** The held tasks of a status (any when undefined) and capability, newest first (memoised until the next change). */
  private list(views: Views, status: TaskStatus | undefined, capability: string | undefined): TaskRecord[] {
    const key = `${status ?? ''}|${capability ?? ''}`;
    let list = views.lists.get(key);
    if (!list) {
      const base = status && isOpenStatus(status) ? views.open : views.held;
      list = !status && !capability ? base : base.filter((t) => (!status || t.status === status) && (!capability || t.capabilities.includes(capability)));
      views.lists.set(key, list);
    }
    return list;
  }

  /** Tasks of a status (any closed one when undefined) and capability below the boundaries (not held). */
  private countedBelow(status: TaskStatus | undefined, capability: string | undefined): number {
    let n = 0;
    for (const s of status ? [status] : CLOSED_STATUSES) n += this.window.below.get(countKey(s, capability)) ?? 0;
    return n;
  }

  /**
   * A page of the tasks matching the filter, newest first, and how many match: from memory when the
   * page lies within what memory holds (see the file's comment), else the page from PostgreSQL (the
   * total still from memory, except for closed lists filtered by a party).
   */
  async page(filter: TaskFilter, limit: number, offset: number): Promise<{ tasks: TaskRecord[]; total: number }> {
    await this.ready();
    if (filter.status && isOpenStatus(filter.status)) return this.openPage(filter, limit, offset);
    if (filter.posterDid || filter.claimerDid) return pageTasks(this.sql, filter, limit, offset);
    const views = this.current();
    const list = this.list(views, filter.status, filter.capability);
    const notHeld = this.countedBelow(filter.status, filter.capability);
    const total = list.length + notHeld;
    // the held tasks that are exactly the head of the full list: a closed status's window, or, across
    // statuses, the tasks at or above the highest boundary
    const floor = filter.status ? null : views.floor;
    const exact = notHeld === 0 || floor === null ? list.length : headAtOrAbove(list, floor);
    if (offset + limit <= exact || exact === total || offset >= total) return { tasks: list.slice(offset, offset + limit), total };
    return { tasks: await pageTaskRecords(this.sql, filter, limit, offset), total };
  }

  /** A page of the open tasks in memory (every open task is held). */
  openPage(filter: TaskFilter, limit: number, offset: number): { tasks: TaskRecord[]; total: number } {
    const views = this.current();
    const hits =
      filter.posterDid || filter.claimerDid
        ? this.list(views, filter.status, filter.capability).filter(
            (t) => (!filter.posterDid || t.posterDid === filter.posterDid) && (!filter.claimerDid || t.claimerDid === filter.claimerDid),
          )
        : this.list(views, filter.status, filter.capability);
    return { tasks: hits.slice(offset, offset + limit), total: hits.length };
  }

  async close(): Promise<void> {
    await this.cache?.close();
    this.cache = null;
  }
}

/** How many of the first entries of a newest-first list have ids at or above `floor`. */
function headAtOrAbove(list: readonly TaskRecord[], floor: string): number {
  let lo = 0;
  let hi = list.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (list[mid]!.taskId >= floor) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
