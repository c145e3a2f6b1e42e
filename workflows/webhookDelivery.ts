/**
 * webhookDelivery (id webhook:{subscriptionId}; issue 28, DESIGN.md section 12 "Events out"): delivers
 * one subscription's events in id order, at least once, for as long as the subscription lives.
 *
 *   round     one activity call (activities/web/webhookDelivery.ts deliverWebhookEvents) sends the
 *             next events after the subscription's cursor, signed per Standard Webhooks, advancing
 *             the cursor in PostgreSQL after each 2xx. A receiver that fails makes the activity fail:
 *             Temporal retries it with backoff (2 s doubling to 15 min) and the activity itself
 *             disables the subscription once its failures have lasted WEBHOOK_RETRY_HOURS. Kills of
 *             the worker mid-round retry the round from the stored cursor: an event may be sent
 *             twice (the receiver dedups by webhook-id), never skipped or reordered.
 *   idle      with nothing more to send the run waits for the `eventsAppended` signal (the worker's
 *             waker, on NOTIFY) or WEBHOOK_IDLE_LOOK_MS, whichever first
 *   history   continue-as-new when Temporal suggests it (or after continueAfterRounds, tests)
 *   end       the subscription was deleted (DELETE /webhooks/{id}) or disabled: the run returns
 *
 * The input carries the subscription id only: URL, filter, cursor and secret are read from
 * PostgreSQL by the activity, so no secret is ever in history. Deterministic code only.
 */
import { condition, continueAsNew, proxyActivities, setCurrentDetails, setHandler, workflowInfo } from '@temporalio/workflow';
import type { WebhookDeliveryActivities } from '../activities/web/webhookDelivery.js';
import { WEBHOOK_IDLE_LOOK_MS, WEBHOOK_RETRY_INITIAL_MS, WEBHOOK_RETRY_MAXIMUM_MS } from '../domain/events.js';
import {
  eventsAppendedSignal,
  webhookDeliveryStateQuery,
  type WebhookDeliveryInput,
  type WebhookDeliveryResult,
  type WebhookDeliveryState,
} from './contracts/webhookDelivery.js';
import { HEARTBEAT_TIMEOUT_MS } from './activityOptions.js';
import { requireBoundStart } from './binding.js';

export async function webhookDelivery(input: WebhookDeliveryInput): Promise<WebhookDeliveryResult> {
  requireBoundStart(input, 'webhookDelivery'); // an input written for another workflow starts nothing (issue 26)
  const web = proxyActivities<WebhookDeliveryActivities>({
    // one round: at most WEBHOOK_BATCH POSTs of at most 10 s each
    startToCloseTimeout: 5 * 60_000,
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, // a dead worker's round is retried within it (worker/keepAlive.ts)
    // no attempt limit: the activity ends the subscription after WEBHOOK_RETRY_HOURS of failures
    retry: { initialInterval: input.retryInitialMs ?? WEBHOOK_RETRY_INITIAL_MS, maximumInterval: input.retryMaximumMs ?? WEBHOOK_RETRY_MAXIMUM_MS, backoffCoefficient: 2 },
  });
  const state: WebhookDeliveryState = { subscriptionId: input.subscriptionId, delivered: input.deliveredBefore ?? 0, lastEventId: null, rounds: 0 };
  let nudged = false;
  setHandler(eventsAppendedSignal, () => {
    nudged = true;
  });
  setHandler(webhookDeliveryStateQuery, () => ({ ...state }));

  const show = (what: string) => setCurrentDetails(`**Webhook** ${input.subscriptionId}: ${state.delivered} events delivered${state.lastEventId ? ` (last ${state.lastEventId})` : ''}. ${what}`);
  show('Looking for events');
  const idleMs = input.idleLookMs ?? WEBHOOK_IDLE_LOOK_MS;
  for (;;) {
    nudged = false; // a signal during the round makes the next round start at once
    const round = await web.deliverWebhookEvents({ subscriptionId: input.subscriptionId });
    state.rounds++;
    if (round.status === 'ended') {
      show(round.ended === 'deleted' ? 'Subscription deleted: delivery ended' : `Subscription disabled: ${round.reason ?? 'deliveries failed'}`);
      return { ended: round.ended, delivered: state.delivered };
    }
    state.delivered += round.delivered;
    if (round.lastEventId) state.lastEventId = round.lastEventId;
    const historyLarge = workflowInfo().continueAsNewSuggested || (input.continueAfterRounds !== undefined && state.rounds >= input.continueAfterRounds);
    if (historyLarge) {
      const { binding, ...rest } = input;
      await continueAsNew<typeof webhookDelivery>({ ...rest, ...(binding ? { binding } : {}), deliveredBefore: state.delivered });
    }
    if (round.more) continue;
    show('Waiting for events');
    await condition(() => nudged, idleMs);
  }
}
