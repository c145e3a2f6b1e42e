/**
 * Every Prometheus metric this service exports itself, in one registry (issue 30; DESIGN.md section 12
 * "Operators' telemetry"; docs/operations.md lists them with their labels and what bounds them). The
 * API and the worker serve it on METRICS_PORT (telemetry/metricsServer.ts); the worker adds the Temporal
 * SDK's own metrics (worker/telemetry.ts).
 *
 * Cardinality: every label takes values from a closed set named here or in the code that sets it (route
 * templates, never concrete paths; status codes; error codes of domain/errors.ts; ledger write kinds);
 * anything else is folded into one value ('unmatched', 'other'). No label ever carries an id, a DID, an
 * address or a key.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { isCatalogCode } from '../domain/errors.js';

export const registry = new Registry();
collectDefaultMetrics({ register: registry });
// prom-client's gauges named *_total break Prometheus's naming rule (promtool check metrics refuses them);
// the same figures stay in nodejs_active_handles / _requests / _resources by type
for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);

const PREFIX = 'agent_passport_';

// ------------------------------------------------------------------ HTTP (the API)

/**
 * RED per route: rate and errors from the count by status, duration from the buckets. `route` is the
 * route's template as registered (/passport/:tokenId/:serial), 'unmatched' for every request no route
 * matched (404s of any path are one series).
 */
export const httpRequestDuration = new Histogram({
  name: `${PREFIX}http_request_duration_seconds`,
  help: 'HTTP requests answered by the API, by method, route template (unmatched: no route) and status code',
  labelNames: ['method', 'route', 'status'] as const,
  // a hot read answers in well under a millisecond; a paid passport request waits for its workflow (seconds)
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
  registers: [registry],
});

export const UNMATCHED_ROUTE = 'unmatched';

/** Refusals of a quota or a rate limit (every 429), by the error code of the answer. */
export const quotaRefusals = new Counter({
  name: `${PREFIX}quota_refusals_total`,
  help: 'Requests refused by a quota or rate limit (HTTP 429), by error code (domain/errors.ts; other: a code outside the catalog)',
  labelNames: ['code'] as const,
  registers: [registry],
});

export function countQuotaRefusal(code: string | undefined): void {
  quotaRefusals.labels(code !== undefined && isCatalogCode(code) ? code : 'other').inc();
}

// ------------------------------------------------------------------ the ledger (the worker: ledger/submit.ts)

/** Ledger write kinds the submitter records (IdempotentSubmitInput.kind); others count as 'other'. */
export const LEDGER_WRITE_KINDS = new Set([
  'transaction',
  'hbar_transfer',
  'nft_mint',
  'nft_burn',
  'nft_transfer',
  'nft_update',
  'nft_wipe',
  'schedule_create',
  'schedule_delete',
  'schedule_sign',
  'topic_message',
  'a2a_message',
  'token_freeze',
  'token_unfreeze',
]);

/**
 * What one call of the idempotent submitter ended with: succeeded (a new transaction reached
 * consensus), reused (the outcome of an earlier attempt under the same key), failed (the ledger
 * answered a final failure), retryable (outcome unknown or transient: Temporal retries the activity).
 */
export type LedgerSubmissionOutcome = 'succeeded' | 'reused' | 'failed' | 'retryable';

export const ledgerSubmissions = new Counter({
  name: `${PREFIX}ledger_submissions_total`,
  help: 'Ledger writes through the idempotent submitter, by kind and outcome (succeeded, reused, failed, retryable)',
  labelNames: ['kind', 'outcome'] as const,
  registers: [registry],
});

export function countLedgerSubmission(kind: string | undefined, outcome: LedgerSubmissionOutcome): void {
  ledgerSubmissions.labels(LEDGER_WRITE_KINDS.has(kind ?? 'transaction') ? (kind ?? 'transaction') : 'other', outcome).inc();
}

// ------------------------------------------------------------------ business gauges (the worker, worker/businessMetrics.ts)

/** Age buckets of payments awaiting reconciliation (upper bounds; the last is open). */
export const PAYMENT_AGE_BUCKETS = [
  { label: 'lt_10m', maxSeconds: 600 },
  { label: '10m_1h', maxSeconds: 3_600 },
  { label: '1h_24h', maxSeconds: 86_400 },
  { label: 'ge_24h', maxSeconds: Infinity },
] as const;

export const paymentsAwaitingReconciliation = new Gauge({
  name: `${PREFIX}payments_awaiting_reconciliation`,
  help: 'x402 payments recorded with neither a passport or upgrade, a refund nor a failure yet, by age bucket',
  labelNames: ['age'] as const,
  registers: [registry],
});

export const oldestPaymentAwaitingAge = new Gauge({
  name: `${PREFIX}payment_awaiting_reconciliation_oldest_age_seconds`,
  help: 'Age of the oldest payment awaiting reconciliation (0 when none)',
  registers: [registry],
});

/** Refunds recorded in PostgreSQL (passport payments refunded, task escrows refunded): a count read from the database, so it survives restarts and never counts a retried refund twice. */
export const refunds = new Counter({
  name: `${PREFIX}refunds_total`,
  help: 'Refunds made: passport payments (kind=payment) and task escrows (kind=escrow), as recorded in PostgreSQL',
  labelNames: ['kind'] as const,
  registers: [registry],
});

export const escrowBalance = new Gauge({
  name: `${PREFIX}escrow_balance_tinybars`,
  help: "The escrow account's HBAR balance on the ledger (mirror node), in tinybars",
  registers: [registry],
});

export const escrowHeld = new Gauge({
  name: `${PREFIX}escrow_held_tinybars`,
  help: 'What the funded, unpaid task escrows hold according to PostgreSQL, in tinybars',
  registers: [registry],
});

export const escrowDrift = new Gauge({
  name: `${PREFIX}escrow_drift_tinybars`,
  help: 'Escrow balance on the ledger minus the funded, unpaid escrows in PostgreSQL, in tinybars (0 when they agree)',
  registers: [registry],
});

/** Schedules whose last run an operator watches (the reconcilers), by schedule name. */
export const scheduleLastAction = new Gauge({
  name: `${PREFIX}schedule_last_action_timestamp_seconds`,
  help: 'When a Temporal Schedule of this task queue last started its workflow (Unix seconds), by schedule',
  labelNames: ['schedule'] as const,
  registers: [registry],
});

export const scheduleInterval = new Gauge({
  name: `${PREFIX}schedule_interval_seconds`,
  help: 'How often a Temporal Schedule of this task queue is meant to run, by schedule',
  labelNames: ['schedule'] as const,
  registers: [registry],
});

export const businessMetricsUpdated = new Gauge({
  name: `${PREFIX}business_metrics_last_success_timestamp_seconds`,
  help: 'When the worker last recomputed the business gauges without an error (Unix seconds)',
  registers: [registry],
});

export const businessMetricsErrors = new Counter({
  name: `${PREFIX}business_metrics_errors_total`,
  help: 'Failed recomputations of the business gauges, by part (payments, refunds, escrow, schedules)',
  labelNames: ['part'] as const,
  registers: [registry],
});

// ------------------------------------------------------------------ directory liveness (the worker: issue 29 item 6)

/** Outcomes of a directory probe (workflows/contracts/directoryProbe.ts PROBE_OUTCOMES); others count as 'other'. */
const PROBE_OUTCOMES: ReadonlySet<string> = new Set(['card', 'endpoint', 'offline']);

export const directoryProbes = new Counter({
  name: `${PREFIX}directory_probes_total`,
  help: 'Liveness probes of directory entries, by outcome: card (the A2A card answered), endpoint (the endpoint answered), offline (neither)',
  labelNames: ['outcome'] as const,
  registers: [registry],
});

export function countDirectoryProbe(outcome: string): void {
  directoryProbes.labels(PROBE_OUTCOMES.has(outcome) ? outcome : 'other').inc();
}

// Webhook backlog (issue 28): the worker that delivers events will export
//   agent_passport_webhook_backlog_events{}                         events not yet delivered, all subscriptions
//   agent_passport_webhook_oldest_undelivered_age_seconds{}         age of the oldest of them
// here, beside the gauges above; the alert WebhookBacklogTooOld in deploy/prometheus/alerts.rules.yml is
// already written against these names and stays silent until they exist.
