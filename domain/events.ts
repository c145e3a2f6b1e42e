/**
 * Events out (issue 28; DESIGN.md section 12 "Events out"): the event types, who each one is for
 * (its audience), the bodies derived from a task's change, the event id (UUIDv7, the cursor) and
 * the webhook bounds. Pure: the projection writes (db/queries/*) call it inside their transaction,
 * the API and the delivery workflow read the same catalog.
 *
 * An event body carries ids and public fields only: never a key, never a delivered result (a
 * delivery names resultSha256 and resultIpfs; the parties read the result with a signed GET of the
 * task), never an A2A message body (the recipient reads its inbox).
 */

export const EVENT_TYPES = [
  'task.posted',
  'task.claimed',
  'task.delivered',
  'task.verified',
  'task.completed',
  'task.cancelled',
  'task.expired',
  'task.released',
  'task.reward_increased',
  'passport.issued',
  'passport.upgraded',
  'passport.revoked',
  'payment.refunded',
  'a2a.message_received',
  'agent.registered',
  'trust.ownership_verified',
  'trust.attested',
  'webhook.disabled',
] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export function isEventType(s: string): s is EventType {
  return (EVENT_TYPES as readonly string[]).includes(s);
}

/**
 * Types that also reach subscriptions whose capability filter overlaps the task's capabilities
 * (work an agent could take): a new task, and a task whose claim lapsed and is open again.
 */
export const BROADCAST_TYPES: readonly EventType[] = ['task.posted', 'task.released'];

/** An event as written: `key` makes the write idempotent (a retried projection write adds nothing). */
export interface NewEvent {
  type: EventType;
  /** what the event is about: a task id, `${tokenId}/${serial}`, a message id, a DID, a domain, a webhook id */
  subject: string;
  /** the DIDs the event is for (pull and their webhooks) */
  audience: string[];
  /** broadcast types only: the task's capabilities, matched against subscriptions' capability filters */
  capabilities?: string[];
  data: Record<string, unknown>;
  /** unique per change, e.g. `task:{taskId}:{seq}` */
  key: string;
}

/** The body a client receives, by pull or webhook (Standard Webhooks' { type, timestamp, data }, plus the id). */
export interface EventBody {
  id: string;
  type: EventType;
  timestamp: string;
  subject: string;
  data: Record<string, unknown>;
}

// ------------------------------------------------------------------ bounds

/** Longest long-poll of GET /agents/{did}/events (seconds). */
export const EVENTS_WAIT_MAX_S = 30;
/** Most events one pull or one delivery batch returns. */
export const EVENTS_PAGE_MAX = 100;
/** Events one delivery activity sends before it reports progress to its workflow. */
export const WEBHOOK_BATCH = 20;
/** Deadline of one webhook POST (Standard Webhooks recommends a short one; the receiver queues its work). */
export const WEBHOOK_TIMEOUT_MS = 10_000;
/** Delivery attempts kept per subscription for GET /webhooks/{id}/deliveries. */
export const WEBHOOK_DELIVERIES_KEPT = 200;
/** Longest webhook URL accepted. */
export const WEBHOOK_URL_MAX = 2_048;

// ------------------------------------------------------------------ task events

/** The task fields an event needs (a subset of domain/market.ts TaskRecord, so this file imports nothing). */
export interface TaskEventView {
  taskId: string;
  title: string;
  status: string;
  escrowStatus: string;
  priceHbar: number;
  capabilities: string[];
  posterDid: string;
  claimerDid: string | null;
  resultSha256: string | null;
  resultIpfs: string | null;
  paymentTxId: string | null;
  refundTxId: string | null;
  verification?: { passed: boolean; at: string; inconclusive?: boolean } | null;
}

/** What the workflow said of the step (its topic message type and reason), when it says it. */
export interface TaskStepHint {
  type: string;
  reason?: string;
}

const uniq = (xs: (string | null | undefined)[]) => [...new Set(xs.filter((x): x is string => typeof x === 'string' && x.length > 0))];

/**
 * The event of one step of a task (at most one per projection write), from the row before and after
 * and, when the workflow gave it, the step's own type: the workflow knows that a cancellation was a
 * deadline (task.expired) and a poster's cancel was not. Without a hint (the escrow reconciler,
 * records written before the hint existed) the change of status decides. A lapsed claim (claimed back
 * to posted) is task.released, for the poster, the former claimer and the capability filters.
 */
export function taskEvent(prior: TaskEventView | null, next: TaskEventView, seq: number, hint?: TaskStepHint | null): NewEvent | null {
  const type = taskEventType(prior, next, hint);
  if (!type) return null;
  const formerClaimer = prior?.claimerDid ?? null;
  const data: Record<string, unknown> = {
    taskId: next.taskId,
    title: next.title,
    status: next.status,
    escrowStatus: next.escrowStatus,
    priceHbar: next.priceHbar,
    capabilities: next.capabilities,
    posterDid: next.posterDid,
    claimerDid: next.claimerDid,
    seq,
  };
  if (hint?.reason) data.reason = hint.reason;
  if (type === 'task.released') data.formerClaimerDid = formerClaimer;
  if (type === 'task.delivered' || type === 'task.verified' || type === 'task.completed') {
    data.resultSha256 = next.resultSha256;
    data.resultIpfs = next.resultIpfs;
  }
  if (type === 'task.verified' && next.verification) {
    data.passed = next.verification.passed;
    if (next.verification.inconclusive) data.inconclusive = true;
  }
  if (next.paymentTxId) data.paymentTxId = next.paymentTxId;
  if (next.refundTxId) data.refundTxId = next.refundTxId;
  if (type === 'task.reward_increased' && prior) data.previousPriceHbar = prior.priceHbar;
  return {
    type,
    subject: next.taskId,
    audience: uniq([next.posterDid, next.claimerDid, formerClaimer]),
    ...(BROADCAST_TYPES.includes(type) ? { capabilities: next.capabilities } : {}),
    data,
    key: `task:${next.taskId}:${seq}`,
  };
}

function taskEventType(prior: TaskEventView | null, next: TaskEventView, hint?: TaskStepHint | null): EventType | null {
  const lapsedClaim = prior?.status === 'claimed' && next.status === 'posted';
  if (hint) {
    if (lapsedClaim) return 'task.released';
    return isEventType(hint.type) && hint.type.startsWith('task.') ? hint.type : null;
  }
  if (!prior) return next.status === 'posted' ? 'task.posted' : next.status === 'cancelled' ? 'task.cancelled' : null;
  if (prior.status !== next.status) {
    if (lapsedClaim) return 'task.released';
    const byStatus: Record<string, EventType> = {
      claimed: 'task.claimed',
      delivered: 'task.delivered',
      completed: 'task.completed',
      cancelled: 'task.cancelled',
    };
    return byStatus[next.status] ?? null;
  }
  if (next.priceHbar > prior.priceHbar) return 'task.reward_increased';
  if (next.verification && next.verification.at !== prior.verification?.at) return 'task.verified';
  return null;
}

// ------------------------------------------------------------------ event ids (UUIDv7, strictly increasing)

const COUNTER_BITS = 74n; // rand_a (12) and rand_b (62)
const COUNTER_MAX = (1n << COUNTER_BITS) - 1n;

function toUuid(ms: bigint, counter: bigint): string {
  const randA = counter >> 62n;
  const randB = counter & ((1n << 62n) - 1n);
  const v = (ms << 80n) | (7n << 76n) | (randA << 64n) | (2n << 62n) | randB;
  const h = v.toString(16).padStart(32, '0');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

function fromUuid(id: string): { ms: bigint; counter: bigint } {
  const v = BigInt(`0x${id.replace(/-/g, '')}`);
  const randA = (v >> 64n) & 0xfffn;
  const randB = v & ((1n << 62n) - 1n);
  return { ms: v >> 80n, counter: (randA << 62n) | randB };
}

/**
 * `count` UUIDv7 ids, each greater than `last` (the greatest id written so far) and than the one
 * before: a clock behind `last` (another process's, or one set back) continues from `last` + 1, so
 * ids only grow. The caller holds the events lock (db/queries/events.ts), so the ids are also in
 * commit order. `random` gives 10 random bytes per id (its top 74 bits are used).
 */
export function nextEventIds(last: string | null, count: number, nowMs: number, random: () => Uint8Array): string[] {
  let prev = last ? fromUuid(last) : null;
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const bytes = random();
    let r = 0n;
    for (const b of bytes.subarray(0, 10)) r = (r << 8n) | BigInt(b);
    let ms = BigInt(nowMs);
    let counter = r >> 6n; // 80 random bits -> 74
    if (prev && (ms < prev.ms || (ms === prev.ms && counter <= prev.counter))) {
      ms = prev.ms;
      counter = prev.counter + 1n;
      if (counter > COUNTER_MAX) {
        ms += 1n;
        counter = 0n;
      }
    }
    prev = { ms, counter };
    out.push(toUuid(ms, counter));
  }
  return out;
}

/** UUIDv7 (RFC 9562) as an event id or cursor. */
export const EVENT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

// ------------------------------------------------------------------ webhooks

/** Standard Webhooks secret: `whsec_` and the base64 of 32 random bytes. */
export function webhookSecretOf(bytes: Uint8Array): string {
  let bin = '';
  for (const b of bytes) bin += String.fromCharCode(b);
  return `whsec_${btoa(bin)}`;
}

/** Whether an event reaches a subscription: its type is subscribed, and it is the owner's or a broadcast its capability filter matches. */
export function eventReaches(
  sub: { ownerDid: string; events: readonly string[]; capabilities: readonly string[] },
  ev: { type: string; audience: readonly string[]; capabilities: readonly string[] },
): boolean {
  if (!sub.events.includes(ev.type)) return false;
  if (ev.audience.includes(sub.ownerDid)) return true;
  return BROADCAST_TYPES.includes(ev.type as EventType) && sub.capabilities.some((c) => ev.capabilities.includes(c));
}

/** Backoff of a failing subscription's attempts: 2 s, doubling, at most 15 min apart (about 300 attempts in 72 h). */
export const WEBHOOK_RETRY_INITIAL_MS = 2_000;
export const WEBHOOK_RETRY_MAXIMUM_MS = 15 * 60_000;
/** An idle delivery workflow looks for events this often even without a signal (a lost NOTIFY is caught up). */
export const WEBHOOK_IDLE_LOOK_MS = 5 * 60_000;

/**
 * What is wrong with a webhook URL, or null: http(s), no credentials, https only in production; a
 * loopback or private host named literally is refused outside development (the SSRF guard refuses
 * any non-public address at every delivery anyway; this answers the obvious cases at creation).
 */
export function webhookUrlProblem(raw: string, env: { production: boolean; development: boolean }): string | null {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return 'url must be an absolute http(s) URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'url must be http(s)';
  if (env.production && url.protocol !== 'https:') return 'url must be https';
  if (url.username || url.password) return 'url must not carry credentials';
  if (url.hash) return 'url must not carry a fragment';
  const host = url.hostname.replace(/^\[|\]$/g, '').toLowerCase();
  const loopback = host === 'localhost' || host.endsWith('.localhost') || /^127\./.test(host) || host === '::1';
  if (loopback && env.production) return 'url must not name a loopback host (allowed in development only)';
  return null;
}
