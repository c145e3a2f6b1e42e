/**
 * An agent's marketplace record (issue 19 item 7; DESIGN 11 "Escrow promises"): what every directory
 * entry and agent card shows of a DID's history on the marketplace topic.
 *
 *   as poster    posted (a task.posted message), completed, cancelled after delivery (a cancel, by the
 *                poster or a window, of a task whose result had been delivered)
 *   as claimer   delivered (a task.delivered message naming it), paid (such a task completed)
 *
 * Two ways to the same numbers: from the marketplace topic (recordsFromMessages, a fold of the
 * messages in step order) and from the task projection (each task's contribution, factsOfTask), which
 * PostgreSQL keeps summed per DID (db/queries/marketRecords.ts applies recordDelta on every projection
 * write). Pure; used by the API, the projection writer and the tests that compare the two.
 */
import { refusedAtPosting, wasDelivered, type TaskMessage, type TaskRecord, type TaskStatus } from './market.js';

export interface MarketRecord {
  posted: number;
  completed: number;
  cancelledAfterDelivery: number;
  delivered: number;
  paid: number;
}

export const MARKET_RECORD_FIELDS = ['posted', 'completed', 'cancelledAfterDelivery', 'delivered', 'paid'] as const satisfies readonly (keyof MarketRecord)[];

export function emptyMarketRecord(): MarketRecord {
  return { posted: 0, completed: 0, cancelledAfterDelivery: 0, delivered: 0, paid: 0 };
}

/** The record as answered (directory entries, agent cards): the poster's and the claimer's side apart. */
export interface MarketRecordView {
  asPoster: { posted: number; completed: number; cancelledAfterDelivery: number };
  asClaimer: { delivered: number; paid: number };
}

export function marketRecordView(r: MarketRecord | undefined): MarketRecordView {
  const x = r ?? emptyMarketRecord();
  return { asPoster: { posted: x.posted, completed: x.completed, cancelledAfterDelivery: x.cancelledAfterDelivery }, asClaimer: { delivered: x.delivered, paid: x.paid } };
}

/** What one task says about its parties. */
export interface TaskFacts {
  posterDid: string;
  /** a task.posted message was written (a posting refused for want of an escrow schedule was not) */
  posted: boolean;
  /** the claimer whose result was delivered, if any */
  deliveredBy: string | null;
  status: TaskStatus;
}

export function factsOfTask(t: TaskRecord): TaskFacts {
  const delivered = wasDelivered(t);
  return { posterDid: t.posterDid, posted: !refusedAtPosting(t), deliveredBy: delivered ? t.claimerDid : null, status: t.status };
}

/** The counts one task adds to each of its parties. */
export function contributions(f: TaskFacts): Map<string, MarketRecord> {
  const out = new Map<string, MarketRecord>();
  const of = (did: string) => {
    let r = out.get(did);
    if (!r) out.set(did, (r = emptyMarketRecord()));
    return r;
  };
  if (f.posted) {
    const p = of(f.posterDid);
    p.posted = 1;
    if (f.status === 'completed') p.completed = 1;
    if (f.status === 'cancelled' && f.deliveredBy) p.cancelledAfterDelivery = 1;
  }
  if (f.deliveredBy) {
    const c = of(f.deliveredBy);
    c.delivered = 1;
    if (f.status === 'completed') c.paid = 1;
  }
  return out;
}

/** after - before, per DID, leaving out DIDs whose counts do not move. */
export function recordDelta(before: TaskRecord | null, after: TaskRecord): Map<string, MarketRecord> {
  const a = contributions(factsOfTask(after));
  const b = before ? contributions(factsOfTask(before)) : new Map<string, MarketRecord>();
  const out = new Map<string, MarketRecord>();
  for (const did of new Set([...a.keys(), ...b.keys()])) {
    const d = emptyMarketRecord();
    let moved = false;
    for (const k of MARKET_RECORD_FIELDS) {
      d[k] = (a.get(did)?.[k] ?? 0) - (b.get(did)?.[k] ?? 0);
      if (d[k] !== 0) moved = true;
    }
    if (moved) out.set(did, d);
  }
  return out;
}

/** Sums records per DID. */
export function addRecords(into: Map<string, MarketRecord>, more: Map<string, MarketRecord>): Map<string, MarketRecord> {
  for (const [did, r] of more) {
    const t = into.get(did) ?? emptyMarketRecord();
    for (const k of MARKET_RECORD_FIELDS) t[k] += r[k];
    into.set(did, t);
  }
  return into;
}

/**
 * The records the marketplace topic gives: each task's messages in step order (seq), its poster from
 * task.posted (or its first message), its deliverer from task.delivered, its status from its last
 * message. A message repeated on the topic (same task, same seq) counts once.
 */
export function recordsFromMessages(messages: readonly TaskMessage[]): Map<string, MarketRecord> {
  const byTask = new Map<string, Map<number, TaskMessage>>();
  for (const m of messages) {
    let steps = byTask.get(m.taskId);
    if (!steps) byTask.set(m.taskId, (steps = new Map()));
    if (!steps.has(m.seq)) steps.set(m.seq, m);
  }
  const out = new Map<string, MarketRecord>();
  for (const steps of byTask.values()) {
    const ordered = [...steps.values()].sort((a, b) => a.seq - b.seq);
    const posterDid = ordered.find((m) => m.posterDid)?.posterDid;
    if (!posterDid) continue;
    const delivered = ordered.find((m) => m.type === 'task.delivered');
    addRecords(
      out,
      contributions({
        posterDid,
        posted: ordered.some((m) => m.type === 'task.posted'),
        deliveredBy: delivered?.claimerDid ?? null,
        status: ordered[ordered.length - 1]!.status,
      }),
    );
  }
  return out;
}
