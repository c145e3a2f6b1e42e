/**
 * Contract of paymentReconciler (workflows/paymentReconciler.ts): one pass, started by the Temporal
 * Schedule payment-reconciler:{taskQueue} that every worker ensures (worker/paymentReconciler.ts).
 * Its runs take the schedule's id as their id prefix.
 */
import type { PassportWorkflowTimings } from './passport.js';
import { workflowContract } from './contract.js';

/** The payment reconciler's schedule (and the prefix of its runs' ids): one per task queue, so test files on their own queues never share one. */
export function paymentReconcilerScheduleId(taskQueue: string): string {
  return `payment-reconciler:${taskQueue}`;
}

export interface PaymentReconcilerInput {
  /** a payment without an outcome this long after it was recorded is settled one way or the other (PAYMENT_RECONCILE_AFTER_MS) */
  olderThanMs: number;
  /** payments per pass (default 20); the rest wait for the next pass */
  limit?: number;
  /** prefix of the refund workflow ids it starts (tests sharing one namespace); claims store their workflow ids scoped already */
  workflowIdScope?: string;
  timings?: PassportWorkflowTimings;
}

export interface ReconcileAction {
  paymentTransactionId: string;
  /** issued / upgraded: the request was finished; refunded; released: the payment never moved; running: its workflow is still on it; unresolved: tried again next pass */
  action: 'issued' | 'upgraded' | 'refunded' | 'released' | 'running' | 'unresolved';
  workflowId: string;
  detail?: string;
}

export interface PaymentReconcilerResult {
  checked: number;
  actions: ReconcileAction[];
}

export const paymentReconcilerContract = workflowContract<PaymentReconcilerInput, PaymentReconcilerResult>()({
  type: 'paymentReconciler',
  workflowId: paymentReconcilerScheduleId,
});
