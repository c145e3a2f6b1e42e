/**
 * The webhook waker (issue 28): keeps every active subscription's delivery workflow running and
 * nudges it when an event that may reach it is written, so deliveries start within moments of the
 * projection write without any workflow polling PostgreSQL.
 *
 *   - the active subscriptions in memory (db/liveCache over NOTIFY webhook_changed);
 *   - NOTIFY events_appended names the DIDs (and, for new work, the capabilities) of new events:
 *     each subscription of one of those DIDs, or whose capability filter matches, is signalled
 *     (eventsAppended) through signalWithStart, which also starts its workflow if none is open
 *     (Temporal was down when the API created it, or the run ended);
 *   - a subscription that appears or changes, and every one after a full load (start-up, and every
 *     reconnect of the LISTEN connection, when notices may have been lost), is nudged too.
 * Nudges are coalesced (one signal per subscription per FLUSH_MS) and sent a few at a time. Two
 * workers both nudging is harmless: a signal only makes the workflow look.
 */
import type { Client } from '@temporalio/client';
import type { Sql } from 'postgres';
import { startLiveCache } from '../db/liveCache.js';
import { CHANNELS, listenChanges, type ChangeListener } from '../db/notify.js';
import { parseEventsNotice } from '../db/queries/events.js';
import { findWebhook, listActiveWebhooks, type WebhookRow } from '../db/queries/webhooks.js';
import { BROADCAST_TYPES } from '../domain/events.js';
import { signalWithStartWorkflow } from '../temporal/workflows.js';
import { eventsAppendedSignal, webhookDeliveryContract, webhookDeliveryWorkflowId } from '../workflows/contracts/webhookDelivery.js';

const FLUSH_MS = 50;
const CONCURRENCY = 8;

export interface WebhookWakerDeps {
  sql: Sql;
  client: () => Promise<Client>;
  taskQueue: string;
  /** WORKFLOW_ID_SCOPE (tests sharing a namespace) */
  workflowIdScope?: string;
  log: (msg: string, err?: unknown) => void;
}

export interface WebhookWaker {
  close(): Promise<void>;
}

export async function startWebhookWaker(deps: WebhookWakerDeps): Promise<WebhookWaker> {
  const subs = startLiveCache<WebhookRow>(
    deps.sql,
    {
      name: 'webhooks',
      channel: CHANNELS.webhook,
      keyOf: (w) => w.id,
      loadAll: (sql) => listActiveWebhooks(sql),
      loadKey: async (sql, id) => {
        const row = await findWebhook(sql, id);
        return row?.status === 'active' ? row : null;
      },
    },
    { onError: (err) => deps.log('webhook subscriptions cache', err) },
  );
  const pending = new Set<string>();
  let timer: NodeJS.Timeout | null = null;
  let closed = false;

  const nudge = (id: string) => {
    if (closed) return;
    pending.add(id);
    timer ??= setTimeout(() => void flush(), FLUSH_MS);
  };

  async function flush(): Promise<void> {
    timer = null;
    const ids = [...pending];
    pending.clear();
    let client: Client;
    try {
      client = await deps.client();
    } catch (err) {
      deps.log('webhook waker: Temporal unreachable', err);
      for (const id of ids) pending.add(id);
      timer ??= setTimeout(() => void flush(), 5_000);
      return;
    }
    for (let i = 0; i < ids.length; i += CONCURRENCY) {
      await Promise.all(
        ids.slice(i, i + CONCURRENCY).map(async (id) => {
          const workflowId = `${deps.workflowIdScope ?? ''}${webhookDeliveryWorkflowId(id)}`;
          const row = subs.get(id);
          try {
            await signalWithStartWorkflow(client, webhookDeliveryContract, { subscriptionId: id }, eventsAppendedSignal, {
              taskQueue: deps.taskQueue,
              workflowId,
              ...(row ? { staticSummary: `Webhook ${id} of ${row.owner_did} → ${hostOf(row.url)}` } : {}),
            });
          } catch (err) {
            deps.log(`webhook waker: could not signal ${workflowId}`, err);
          }
        }),
      );
    }
  }

  // a subscription that appears, changes or goes (deleted: its run ends at its next look), and all
  // of them after a full load, is looked at
  subs.onChange((id) => nudge(id));

  const listener: ChangeListener = await listenChanges(
    deps.sql,
    CHANNELS.events,
    (payload) => {
      const notice = parseEventsNotice(payload);
      const dids = new Set(notice?.a ?? []);
      const caps = new Set(notice?.c ?? []);
      for (const w of subs.values()) {
        const reaches = !notice || notice.all || dids.has(w.owner_did) || (caps.size > 0 && w.events.some((t) => (BROADCAST_TYPES as readonly string[]).includes(t)) && w.capabilities.some((c) => caps.has(c)));
        if (reaches) nudge(w.id);
      }
    },
    () => {},
    { onError: (err) => deps.log('webhook waker listener', err) },
  );

  return {
    async close() {
      closed = true;
      if (timer) clearTimeout(timer);
      await listener.close();
      await subs.close();
    },
  };
}

function hostOf(url: string): string {
  try {
    return new URL(url).host;
  } catch {
    return url;
  }
}
