/**
 * Contract of webhookDelivery (workflows/webhookDelivery.ts): one run per webhook subscription,
 * started by POST /webhooks (api/webhooks/subscriptions.ts), nudged by the `eventsAppended` signal
 * (worker/webhookWaker.ts, on NOTIFY events_appended), ended when the subscription is deleted or
 * disabled. Its input names the subscription only: the URL, the filter, the cursor and the secret
 * are read from PostgreSQL by the activity (the secret never enters history).
 */
import { defineQuery, defineSignal } from '@temporalio/workflow';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** webhook:{subscriptionId} */
export function webhookDeliveryWorkflowId(subscriptionId: string): string {
  return `webhook:${subscriptionId}`;
}

export interface WebhookDeliveryInput extends Bound {
  subscriptionId: string;
  /** events delivered by earlier runs of this id (continue-as-new), for the summary */
  deliveredBefore?: number;
  /** retry knobs (defaults domain/events.ts; tests pass small ones) */
  retryInitialMs?: number;
  retryMaximumMs?: number;
  /** an idle run looks again after this long without a signal (default WEBHOOK_IDLE_LOOK_MS) */
  idleLookMs?: number;
  /** continue as new after this many rounds (tests); default when Temporal suggests it */
  continueAfterRounds?: number;
}

export interface WebhookDeliveryResult {
  /** why the run ended: the subscription was deleted, or disabled after WEBHOOK_RETRY_HOURS of failures */
  ended: 'deleted' | 'disabled';
  delivered: number;
}

/** What one activity call did (activities/web/webhookDelivery.ts). */
export type DeliveryRound =
  | { status: 'delivered'; delivered: number; lastEventId: string | null; more: boolean }
  | { status: 'ended'; ended: 'deleted' | 'disabled'; reason?: string };

export interface WebhookDeliveryState {
  subscriptionId: string;
  delivered: number;
  lastEventId: string | null;
  rounds: number;
}

/** Something was written that may concern the subscription: look now. */
export const eventsAppendedSignal = defineSignal('eventsAppended');
export const webhookDeliveryStateQuery = defineQuery<WebhookDeliveryState>('state');

export const webhookDeliveryContract = workflowContract<WebhookDeliveryInput, WebhookDeliveryResult>()({
  type: 'webhookDelivery',
  workflowId: webhookDeliveryWorkflowId,
  signals: { eventsAppended: eventsAppendedSignal },
  queries: { state: webhookDeliveryStateQuery },
});
