/**
 * The tasks projection (db/migrations/0009_tasks.ts). Every write announces the task on
 * NOTIFY task_changed in its own transaction (db/notify.ts); the API's memory (db/liveCache.ts)
 * reloads that one row.
 */
import type { Sql } from 'postgres';
import type { TaskRecord, TaskStatus } from '../../domain/market.js';
import { addRecords, recordDelta, type MarketRecord } from '../../domain/marketRecord.js';
import { CHANNELS, notifyChange, RELOAD_ALL } from '../notify.js';
import { applyRecordDelta, applyRecordDeltaBulk } from './marketRecords.js';
import { taskEvent, type TaskStepHint } from '../../domain/events.js';
import { appendEvents } from './events.js';

export interface TaskRow {
  task_id: string;
  status: string;
  escrow_status: string;
  poster_did: string;
  claimer_did: string | null;
  price_tinybars: string;
  capabilities: string[];
  schedule_id: string | null;
  payment_tx_id: string | null;
  seq: number;
  record: TaskRecord;
  created_at: Date;
  updated_at: Date;
}

/**
 * Writes the task as of step `seq` (insert or update when newer) and notifies, in one transaction,
 * with the step's event for the parties (domain/events.ts taskEvent; `hint` is the workflow's own
 * name for the step). Returns false when the row already holds that step or a later one (nothing written).
 */
export async function upsertTask(sql: Sql, task: TaskRecord, seq: number, hint?: TaskStepHint | null): Promise<boolean> {
  return sql.begin(async (tx) => {
    // the row as it was (locked): the change of the parties' marketplace records is after - before
    const [prior] = await tx<{ seq: number; record: TaskRecord }[]>`select seq, record from tasks where task_id = ${task.taskId} for update`;
    if (prior && prior.seq >= seq) return false;
    const rows = await tx`
      insert into tasks (task_id, status, escrow_status, poster_did, claimer_did, price_tinybars, capabilities,
                         schedule_id, payment_tx_id, seq, record, created_at, updated_at)
      values (${task.taskId}, ${task.status}, ${task.escrowStatus}, ${task.posterDid}, ${task.claimerDid},
              ${task.priceTinybars}, ${tx.json(task.capabilities)}, ${task.scheduleId}, ${task.paymentTxId}, ${seq},
              ${tx.json(task as never)}, ${task.createdAt}, ${task.updatedAt})
      on conflict (task_id) do update set
        status = excluded.status, escrow_status = excluded.escrow_status, claimer_did = excluded.claimer_did,
        price_tinybars = excluded.price_tinybars, capabilities = excluded.capabilities, schedule_id = excluded.schedule_id,
        payment_tx_id = excluded.payment_tx_id, seq = excluded.seq, record = excluded.record, updated_at = excluded.updated_at
      where tasks.seq < excluded.seq
      returning task_id`;
    if (rows.length === 0) return false;
    await notifyChange(tx, CHANNELS.task, task.taskId);
    await applyRecordDelta(tx, recordDelta(prior?.record ?? null, task));
    const event = taskEvent(prior?.record ?? null, task, seq, hint);
    if (event) await appendEvents(tx, [event]); // last: it takes the events lock until commit
    return true;
  });
}

/** The open tasks (the task book's full load). */
export async function listOpenTasks(sql: Sql): Promise<TaskRecord[]> {
  return (await sql<{ record: TaskRecord }[]>`select record from tasks where status in ('posted', 'claimed', 'delivered')`).map((r) => r.record);
}

/** One task if it is open (the task book's reload of one key); null when closed or missing. */
export async function findOpenTask(sql: Sql, taskId: string): Promise<TaskRecord | null> {
  const [row] = await sql<{ record: TaskRecord }[]>`select record from tasks where task_id = ${taskId} and status in ('posted', 'claimed', 'delivered')`;
  return row?.record ?? null;
}

export interface TaskQuery {
  capability?: string;
  status?: TaskStatus;
  posterDid?: string;
  claimerDid?: string;
}

/** A page of tasks, newest first (task ids are UUIDv7), and how many match: the list reads that include closed tasks. */
export async function pageTasks(sql: Sql, q: TaskQuery, limit: number, offset: number): Promise<{ tasks: TaskRecord[]; total: number }> {
  const [tasks, [count]] = await Promise.all([
    pageTaskRecords(sql, q, limit, offset),
    sql<{ total: number }[]>`select count(*)::int as total from tasks ${taskWhere(sql, q)}`,
  ]);
  return { tasks, total: count?.total ?? 0 };
}

/** A page of tasks, newest first, without the count (for a caller that knows the total: the task book). */
export async function pageTaskRecords(sql: Sql, q: TaskQuery, limit: number, offset: number): Promise<TaskRecord[]> {
  const rows = await sql<{ record: TaskRecord }[]>`select record from tasks ${taskWhere(sql, q)} order by task_id desc limit ${limit} offset ${offset}`;
  return rows.map((r) => r.record);
}

function taskWhere(sql: Sql, q: TaskQuery) {
  return sql`
    where true
    ${q.capability ? sql`and capabilities @> ${sql.json([q.capability])}` : sql``}
    ${q.status ? sql`and status = ${q.status}` : sql``}
    ${q.posterDid ? sql`and poster_did = ${q.posterDid}` : sql``}
    ${q.claimerDid ? sql`and claimer_did = ${q.claimerDid}` : sql``}`;
}

export async function findTask(sql: Sql, taskId: string): Promise<TaskRow | null> {
  const [row] = await sql<TaskRow[]>`select * from tasks where task_id = ${taskId}`;
  return row ?? null;
}

export async function listAllTasks(sql: Sql): Promise<TaskRow[]> {
  return sql<TaskRow[]>`select * from tasks order by task_id`;
}

/** A task the escrow reconciler settles when its workflow is gone: still open, or its escrow still holding money or a pending schedule. */
const awaitsSettlement = (sql: Sql) => sql`(status in ('posted', 'claimed', 'delivered') or escrow_status in ('scheduled', 'funded') or record->>'topUpScheduleId' is not null)`;

/** Of these task ids, the tasks awaiting settlement (the escrow reconciler's candidates among the closed workflows Temporal listed). */
export async function tasksAwaitingSettlement(sql: Sql, taskIds: string[]): Promise<string[]> {
  if (taskIds.length === 0) return [];
  const rows = await sql<{ task_id: string }[]>`
    select task_id from tasks where task_id = any(${sql.array(taskIds)}::uuid[]) and ${awaitsSettlement(sql)} order by task_id`;
  return rows.map((r) => r.task_id);
}

/** Up to `limit` tasks awaiting settlement and unchanged since `unchangedSince`, picked at random (the reconciler looks their workflows up one by one). */
export async function sampleTasksAwaitingSettlement(sql: Sql, unchangedSince: Date, limit: number): Promise<string[]> {
  if (limit <= 0) return [];
  const rows = await sql<{ task_id: string }[]>`
    select task_id from tasks where ${awaitsSettlement(sql)} and updated_at < ${unchangedSince} order by random() limit ${limit}`;
  return rows.map((r) => r.task_id);
}

/**
 * Bulk form of upsertTask for `npm run seed` (scripts/seed.ts): new tasks only, in one multi-row
 * insert per call (tasks already there are left as they are), the parties' marketplace records moved
 * by the inserted ones, and one NOTIFY RELOAD_ALL for the batch (task book and records) instead of
 * one per task. Returns how many tasks were new.
 */
export async function insertTasksBulk(sql: Sql, tasks: readonly { task: TaskRecord; seq: number }[]): Promise<number> {
  if (tasks.length === 0) return 0;
  return sql.begin(async (tx) => {
    const rows = tasks.map(({ task, seq }) => ({
      task_id: task.taskId,
      status: task.status,
      escrow_status: task.escrowStatus,
      poster_did: task.posterDid,
      claimer_did: task.claimerDid,
      price_tinybars: task.priceTinybars,
      capabilities: JSON.stringify(task.capabilities),
      schedule_id: task.scheduleId,
      payment_tx_id: task.paymentTxId,
      seq,
      record: JSON.stringify(task),
      created_at: task.createdAt,
      updated_at: task.updatedAt,
    }));
    const inserted = await tx<{ task_id: string }[]>`
      insert into tasks (task_id, status, escrow_status, poster_did, claimer_did, price_tinybars, capabilities,
                         schedule_id, payment_tx_id, seq, record, created_at, updated_at)
      select x.task_id, x.status, x.escrow_status, x.poster_did, x.claimer_did, x.price_tinybars, x.capabilities::jsonb,
             x.schedule_id, x.payment_tx_id, x.seq, x.record::jsonb, x.created_at, x.updated_at
        from json_to_recordset(${tx.json(rows as never)}::json) as x(
               task_id uuid, status text, escrow_status text, poster_did text, claimer_did text, price_tinybars bigint,
               capabilities text, schedule_id text, payment_tx_id text, seq int, record text, created_at timestamptz,
               updated_at timestamptz)
      on conflict (task_id) do nothing
      returning task_id`;
    if (inserted.length === 0) return 0;
    const fresh = new Set(inserted.map((r) => r.task_id));
    const delta = new Map<string, MarketRecord>();
    for (const { task } of tasks) if (fresh.has(task.taskId)) addRecords(delta, recordDelta(null, task));
    await applyRecordDeltaBulk(tx, delta);
    await notifyChange(tx, CHANNELS.task, RELOAD_ALL);
    return inserted.length;
  }) as Promise<number>;
}

/** What an API process holds of the tasks (the task book's full load; api/market/taskBook.ts). */
export interface TaskWindow {
  /** every open task and the newest `closedPerStatus` of each closed status */
  records: TaskRecord[];
  /**
   * Per closed status whose tasks are not all in `records`: the smallest task id held, so every task
   * of that status with an id at or above it is in `records`, and none below.
   */
  boundaries: Partial<Record<TaskStatus, string>>;
  /** Tasks below their status's boundary (not held): how many per status (capability null) and per status and capability. */
  below: { status: TaskStatus; capability: string | null; count: number }[];
}

/**
 * The task book's full load, in one snapshot (repeatable read): the open tasks, the newest
 * `closedPerStatus` of each closed status, and how many older ones each closed status has (in all
 * and per capability), so list totals need no count query afterwards.
 */
export async function loadTaskWindow(sql: Sql, closedStatuses: readonly TaskStatus[], closedPerStatus: number): Promise<TaskWindow> {
  return sql.begin('isolation level repeatable read read only', async (tx) => {
    const records = (await tx<{ record: TaskRecord }[]>`select record from tasks where status in ('posted', 'claimed', 'delivered')`).map((r) => r.record);
    const boundaries: Partial<Record<TaskStatus, string>> = {};
    const below: TaskWindow['below'] = [];
    for (const status of closedStatuses) {
      const rows = await tx<{ task_id: string; record: TaskRecord }[]>`
        select task_id, record from tasks where status = ${status} order by task_id desc limit ${closedPerStatus}`;
      for (const r of rows) records.push(r.record);
      if (rows.length < closedPerStatus || rows.length === 0) continue;
      const boundary = rows[rows.length - 1]!.task_id;
      boundaries[status] = boundary;
      const [all] = await tx<{ n: number }[]>`select count(*)::int as n from tasks where status = ${status} and task_id < ${boundary}`;
      below.push({ status, capability: null, count: all?.n ?? 0 });
      const perCapability = await tx<{ capability: string; n: number }[]>`
        select c as capability, count(*)::int as n
          from tasks, jsonb_array_elements_text(capabilities) as c
         where status = ${status} and task_id < ${boundary}
         group by c`;
      for (const r of perCapability) below.push({ status, capability: r.capability, count: r.n });
    }
    return { records, boundaries, below };
  }) as Promise<TaskWindow>;
}

