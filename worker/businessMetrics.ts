/**
 * The business gauges (issue 30; telemetry/metrics.ts names them, docs/operations.md says what to do
 * when they move), recomputed by every worker that serves METRICS_PORT every METRICS_BUSINESS_EVERY_MS
 * (never per scrape: one mirror call, one Temporal describe and four small queries per interval):
 *
 *   payments awaiting reconciliation by age, and the oldest one's age   PostgreSQL
 *   refunds made (payments, escrows)                                     PostgreSQL, a count that survives restarts
 *   escrow drift: the escrow account's balance (mirror) minus the funded, unpaid escrows (PostgreSQL)
 *   each reconciler schedule's last start and its interval              Temporal (schedule describe)
 *
 * Every worker computes the same figures, so Prometheus holds one series per worker: the alert rules
 * and the dashboard take max() over them. A part that fails counts in
 * agent_passport_business_metrics_errors_total{part} and keeps its last value; the timestamp of the
 * last complete pass tells how fresh the gauges are.
 */
import type { Sql } from 'postgres';
import { context } from '@opentelemetry/api';
import { suppressTracing } from '@opentelemetry/core';
import type { Client } from '@temporalio/client';
import type { Config } from '../config/index.js';
import type { LedgerServices } from '../ledger/services.js';
import { escrowHeldTinybars, refundCounts, unfinishedPaymentAges, webhookBacklog } from '../db/queries/businessMetrics.js';
import { escrowReconcilerScheduleId } from '../workflows/contracts/escrowReconciler.js';
import { paymentReconcilerScheduleId } from '../workflows/contracts/paymentReconciler.js';
import {
  businessMetricsErrors,
  businessMetricsUpdated,
  escrowBalance,
  escrowDrift,
  escrowHeld,
  oldestPaymentAwaitingAge,
  PAYMENT_AGE_BUCKETS,
  paymentsAwaitingReconciliation,
  refunds,
  scheduleInterval,
  scheduleLastAction,
  webhookBacklog as webhookBacklogGauge,
  webhookOldestUndeliveredAge,
} from '../telemetry/metrics.js';

/** The schedules watched for "the reconciler is not running": their metric name, id and interval. */
export function watchedSchedules(config: Pick<Config, 'TEMPORAL_TASK_QUEUE' | 'PAYMENT_RECONCILE_EVERY_MS' | 'ESCROW_RECONCILE_EVERY_S'>): { name: string; scheduleId: string; everyMs: number }[] {
  return [
    { name: 'payment_reconciler', scheduleId: paymentReconcilerScheduleId(config.TEMPORAL_TASK_QUEUE), everyMs: config.PAYMENT_RECONCILE_EVERY_MS },
    { name: 'escrow_reconciler', scheduleId: escrowReconcilerScheduleId(config.TEMPORAL_TASK_QUEUE), everyMs: config.ESCROW_RECONCILE_EVERY_S * 1000 },
  ];
}

/** The last refund totals exported, so the counters move by the difference (a counter only goes up). */
const exportedRefunds = { payment: 0, escrow: 0 };

export interface BusinessMetricsDeps {
  config: Config;
  sql: Sql;
  ledger?: LedgerServices;
  /** a Temporal client for the schedules (default: one made from config, closed by stop()) */
  temporal?: Client;
}

/** One pass over every gauge; resolves true when every part succeeded. */
export async function refreshBusinessMetrics(deps: BusinessMetricsDeps & { temporal: Client }): Promise<boolean> {
  const { config, sql, ledger, temporal } = deps;
  const parts: Record<string, () => Promise<void>> = {
    async payments() {
      const { counts, oldestSeconds } = await unfinishedPaymentAges(sql, PAYMENT_AGE_BUCKETS.slice(0, -1).map((b) => b.maxSeconds));
      PAYMENT_AGE_BUCKETS.forEach((b, i) => paymentsAwaitingReconciliation.labels(b.label).set(counts[i] ?? 0));
      oldestPaymentAwaitingAge.set(oldestSeconds);
    },
    async refunds() {
      const now = await refundCounts(sql);
      for (const kind of ['payment', 'escrow'] as const) {
        if (now[kind] > exportedRefunds[kind]) refunds.labels(kind).inc(now[kind] - exportedRefunds[kind]);
        else refunds.labels(kind).inc(0); // the series exists from the first pass
        exportedRefunds[kind] = Math.max(exportedRefunds[kind], now[kind]);
      }
    },
    async escrow() {
      if (!ledger) return; // a worker without ledger activities has no escrow to watch
      const [balance, held] = await Promise.all([ledger.mirror.getHbarBalance(ledger.deployment.escrow), escrowHeldTinybars(sql)]);
      if (balance === null) throw new Error(`the mirror does not know the escrow account ${ledger.deployment.escrow}`);
      escrowBalance.set(Number(balance));
      escrowHeld.set(Number(held));
      escrowDrift.set(Number(balance - held));
    },
    async webhooks() {
      const backlog = await webhookBacklog(sql);
      webhookBacklogGauge.set(backlog.events);
      webhookOldestUndeliveredAge.set(backlog.oldestSeconds);
    },
    async schedules() {
      for (const s of watchedSchedules(config)) {
        scheduleInterval.labels(s.name).set(s.everyMs / 1000);
        const info = await temporal.schedule.getHandle(s.scheduleId).describe();
        const last = info.info.recentActions.at(-1)?.takenAt ?? info.info.createdAt;
        scheduleLastAction.labels(s.name).set(last.getTime() / 1000);
      }
    },
  };
  let ok = true;
  for (const [part, run] of Object.entries(parts)) {
    try {
      await run();
    } catch {
      ok = false;
      businessMetricsErrors.labels(part).inc();
    }
  }
  if (ok) businessMetricsUpdated.set(Date.now() / 1000);
  return ok;
}

/** Recomputes the gauges now and every METRICS_BUSINESS_EVERY_MS until stop(). */
export function startBusinessMetrics(deps: BusinessMetricsDeps): { stop(): Promise<void> } {
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let own: Client | undefined;
  const client = async (): Promise<Client> => {
    if (deps.temporal) return deps.temporal;
    own ??= await (await import('../temporal/client.js')).createTemporalClient(deps.config);
    return own;
  };
  let running: Promise<unknown> = Promise.resolve();
  // the passes' own mirror and Temporal calls are no one's request: no trace of their own every interval
  const untraced = suppressTracing(context.active());
  const pass = () => {
    running = context
      .with(untraced, () => client().then((temporal) => refreshBusinessMetrics({ ...deps, temporal })))
      .catch(() => businessMetricsErrors.labels('temporal').inc())
      .finally(() => {
        if (!stopped) timer = setTimeout(pass, deps.config.METRICS_BUSINESS_EVERY_MS).unref();
      });
  };
  pass();
  return {
    async stop() {
      stopped = true;
      clearTimeout(timer);
      await running;
      await own?.connection.close();
    },
  };
}
