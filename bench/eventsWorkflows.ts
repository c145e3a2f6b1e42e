/**
 * Workflows of bench/events.ts's own worker: the product's webhookDelivery (re-exported under its
 * own type name, so the waker's signalWithStart reaches it) and the empty workflow of the Temporal
 * floor, which runs one activity that only says when it ran.
 */
import { proxyActivities } from '@temporalio/workflow';

export { webhookDelivery } from '../workflows/webhookDelivery.js';

export interface BenchFloorActivities {
  /** the wall-clock time at which the activity body ran */
  benchFloorActivity(): Promise<number>;
}

const { benchFloorActivity } = proxyActivities<BenchFloorActivities>({ startToCloseTimeout: 30_000 });

/** start -> one activity -> done: the least a workflow that must run an activity costs on this server */
export async function benchEmptyWorkflow(): Promise<number> {
  return benchFloorActivity();
}
