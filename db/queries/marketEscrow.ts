/**
 * The escrow lock of a marketplace task: its payouts and refunds run one at a time across workers
 * (activities/ledger/market.ts checks what the task holds in escrow under it).
 */
import type { Sql } from 'postgres';

/**
 * Each lock holds a connection reserved from the pool while the work under it (the escrow check, the
 * submitter's records) takes others from the same pool: at most half a pool's connections are reserved
 * for locks at once, so that work always finds one. (Without the bound, as many concurrent escrow writes
 * as the pool has connections reserved all of them and waited forever.)
 */
interface LockSlots {
  free: number;
  waiters: (() => void)[];
}
const SLOTS = new WeakMap<Sql, LockSlots>();

function slotsOf(sql: Sql): LockSlots {
  let s = SLOTS.get(sql);
  if (!s) {
    const max = Number((sql.options as { max?: number }).max) || 10;
    SLOTS.set(sql, (s = { free: Math.max(1, Math.floor(max / 2)), waiters: [] }));
  }
  return s;
}

async function takeSlot(s: LockSlots): Promise<void> {
  if (s.free > 0) {
    s.free--;
    return;
  }
  await new Promise<void>((resolve) => s.waiters.push(resolve)); // handed over by giveSlot
}

function giveSlot(s: LockSlots): void {
  const next = s.waiters.shift();
  if (next) next();
  else s.free++;
}

/**
 * Runs `fn` while a session advisory lock on the task's escrow is held (on a connection reserved
 * for it, released afterwards). Other pool connections stay usable inside `fn`.
 */
export async function withTaskEscrowLock<T>(sql: Sql, taskId: string, fn: () => Promise<T>): Promise<T> {
  const slots = slotsOf(sql);
  await takeSlot(slots);
  try {
    const conn = await sql.reserve();
    try {
      await conn`select pg_advisory_lock(hashtextextended(${`escrow ${taskId}`}, 0))`;
      return await fn();
    } finally {
      await conn`select pg_advisory_unlock_all()`.catch(() => undefined);
      conn.release();
    }
  } finally {
    giveSlot(slots);
  }
}
