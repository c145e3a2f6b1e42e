/**
 * The workflow run an activity runs for: a paid request's claim is owned by the run that took it to the
 * ledger (db/migrations/0055), so the steps that end a claim or pay its payment back compare it with this.
 */
import { Context } from '@temporalio/activity';

export function callerRunId(): string {
  return Context.current().info.workflowExecution?.runId ?? 'outside a workflow';
}
