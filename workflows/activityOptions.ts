/**
 * Activity timeouts sized to the work (issue 13, recovery time). Deterministic constants only.
 *
 * A SIGKILLed worker leaves its in-flight activity to Temporal's timeouts. Every worker heartbeats
 * every running activity about once a second (worker/keepAlive.ts), so with HEARTBEAT_TIMEOUT_MS
 * the server notices a dead worker within 10 s and schedules the retry; the retry backoff is capped
 * at RETRY_MAXIMUM_MS so that an activity that already failed a few times is still retried soon.
 * Dead worker noticed (10 s) + backoff (at most 10 s) + a new worker polling (~4 s): every pending
 * operation goes on within 30 s of the last kill. The start-to-close timeouts only bound an attempt
 * that hangs on a live worker.
 *
 * Changing these options changes no workflow command (Temporal checks command types and activity
 * types, not their timeouts), so recorded histories still replay.
 */

/** a running activity must heartbeat at least this often (the keep-alive sends one per second) */
export const HEARTBEAT_TIMEOUT_MS = 10_000;

/**
 * One attempt of a ledger write through the idempotent submitter (ledger/submit.ts): a few seconds
 * normally; a resent transaction waits up to 30 s for its receipt, a recorded one 5 s, then the mirror.
 */
export const LEDGER_ACTIVITY_TIMEOUT_MS = 60_000;

/** One attempt of a PostgreSQL projection or a short web check. */
export const DB_ACTIVITY_TIMEOUT_MS = 30_000;

/** Backoff cap between attempts (was 30 s; a higher cap would break the 30 s recovery). */
export const RETRY_MAXIMUM_MS = 10_000;

/**
 * Attempts of a ledger write before it counts as failed for good: with the 10 s cap, 40 attempts
 * keep about the same window of ledger outage (~6 minutes) the former 20 attempts at 30 s gave.
 */
export const LEDGER_MAX_ATTEMPTS = 40;
