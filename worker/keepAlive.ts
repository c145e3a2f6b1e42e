/**
 * Keep-alive heartbeats for every activity (issue 13, recovery time). A worker that is SIGKILLed
 * in the middle of an activity leaves it to Temporal's timeouts: without heartbeats another worker
 * retries it only after its whole start-to-close timeout. With this interceptor every running
 * activity heartbeats about once a second, so activities scheduled with a short heartbeatTimeout
 * (workflows/activityOptions.ts) are retried within that timeout after their worker died.
 *
 * Activities that heartbeat progress details themselves keep doing so: the keep-alive resends the
 * last details they gave (never replaces them with nothing). Heartbeats of activities scheduled
 * without a heartbeatTimeout are accepted by the server and ignored, and the SDK throttles them.
 */
import type { Context } from '@temporalio/activity';
import type { ActivityInboundCallsInterceptor, ActivityExecuteInput, Next, ActivityInterceptorsFactory } from '@temporalio/worker';

/** how often a running activity heartbeats (the SDK sends at most one per 80 % of its heartbeatTimeout) */
export const KEEP_ALIVE_INTERVAL_MS = 1_000;

class KeepAliveInbound implements ActivityInboundCallsInterceptor {
  constructor(private readonly ctx: Context) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, 'execute'>): Promise<unknown> {
    // heartbeatFn is the SDK's injected sender; wrapping it remembers the activity's own details
    const holder = this.ctx as unknown as { heartbeatFn: (details?: unknown) => void };
    const send = holder.heartbeatFn;
    let last: unknown = undefined;
    holder.heartbeatFn = (details?: unknown) => {
      last = details;
      send(details);
    };
    const timer = setInterval(() => {
      try {
        send(last);
      } catch {
        // the activity is finishing: nothing to keep alive
      }
    }, KEEP_ALIVE_INTERVAL_MS);
    timer.unref();
    try {
      return await next(input);
    } finally {
      clearInterval(timer);
    }
  }
}

/** The worker interceptor factory: `interceptors: { activity: [keepAliveInterceptor] }`. */
export const keepAliveInterceptor: ActivityInterceptorsFactory = (ctx) => ({ inbound: new KeepAliveInbound(ctx) });
