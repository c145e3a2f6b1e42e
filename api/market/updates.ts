/**
 * How the marketplace drives a task's workflow (taskLifecycle, id task:{taskId}; its contract is
 * workflows/contracts/taskLifecycle.ts) and reads what its steps wrote:
 *
 *   loadTask(market, id)    the task as its last step wrote it (PostgreSQL), for step routes; 404 market_task_not_found
 *   readTask(market, id)    the task from memory (NOTIFY-fed), for read routes
 *   runTaskUpdate(...)      runs a taskLifecycle Update and maps its refusal (validator or handler,
 *                           a TaskRefusal ApplicationFailure) to the SPEC status; WorkflowPending
 *                           (api/workflowCalls.ts) when the step is still running after the app's
 *                           bounded wait (the error handler answers it 202)
 *   refuseEarly(...)        the same refusal answered from the written record before any Update
 *   refuse(r)               a domain refusal (domain/market.ts) as the ApiError it is answered with
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { UpdateDefinition } from '@temporalio/common';
import { ApiError, echo } from '../errors.js';
import { temporalClient, withinDeadline, WorkflowPending } from '../workflowCalls.js';
import { isCatalogCode } from '../../domain/errors.js';
import { isTaskId, refusalOf, type TaskOperation, type TaskRecord, type TaskRefusal } from '../../domain/market.js';
import { findTask } from '../../db/queries/marketTasks.js';
import { TASK_REFUSAL_TYPE, taskLifecycleContract, taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';
import { boundUpdateArgument, workflowHandle } from '../../temporal/workflows.js';
import { recordStepAuthorisation } from '../../db/queries/stepAuthorisations.js';
import { needsStepAuthorisation, stepArgumentSha256 } from '../../domain/stepAuthorisation.js';
import type { Market } from './state.js';

export function taskNotFound(taskId: string): ApiError {
  return new ApiError('market_task_not_found', `Task ${echo(taskId)} does not exist`, { hint: 'GET /market/tasks lists the tasks' });
}

/**
 * The task as the last finished step wrote it, from PostgreSQL (one primary-key read), for the routes
 * that take a step: a step's projection is written before its Update answers, so a client that sends
 * the next step at once is checked against it, while this process's memory may still be a NOTIFY
 * behind. 404 market_task_not_found.
 */
export async function loadTask(market: Market, taskId: string): Promise<TaskRecord> {
  const id = taskId.toLowerCase();
  if (!isTaskId(id)) throw taskNotFound(taskId);
  const row = await findTask(market.sql, id);
  if (!row) throw taskNotFound(taskId);
  return row.record;
}

/** The task for the read routes: from memory (NOTIFY-fed), PostgreSQL when this process has not heard of it yet. */
export async function readTask(market: Market, taskId: string): Promise<TaskRecord> {
  await market.book.ready();
  return market.book.get(taskId) ?? loadTask(market, taskId);
}

export function refusalError(r: TaskRefusal): ApiError {
  const code = isCatalogCode(r.code) ? r.code : 'invalid_request';
  return new ApiError(code, r.message, { status: r.status, hint: r.hint });
}

/** Throws the ApiError of a domain refusal (domain/market.ts), if there is one. */
export function refuse(r: TaskRefusal | null): void {
  if (r) throw refusalError(r);
}

/** Answers the SPEC status from the written record before any Update (the workflow checks again). */
export function refuseEarly(op: TaskOperation, task: TaskRecord, callerDid?: string): void {
  refuse(refusalOf(op, task, callerDid));
}

/** 202 request_pending: the task's step is still running; the task's URL shows when it is done. */
export function taskPending(taskId: string): WorkflowPending {
  return new WorkflowPending(taskWorkflowId(taskId), `/market/tasks/${taskId}`, 'The task step was accepted and is still running');
}

/**
 * Runs an Update of the task's workflow and returns its result. A refusal (validator or handler)
 * becomes the ApiError of its TaskRefusal (SPEC statuses); a step still running after the bounded
 * wait throws WorkflowPending (taskPending; the error handler answers it 202); a closed or missing workflow answers
 * from the record (refusal or 404).
 */
export async function runTaskUpdate<R, A extends unknown[]>(
  market: Market,
  task: Pick<TaskRecord, 'taskId'>,
  update: UpdateDefinition<R, A>,
  ...args: A
): Promise<R> {
  const client = await temporalClient(market.ctx);
  const handle = workflowHandle(client, taskLifecycleContract, taskWorkflowId(task.taskId));
  const sent = await authorisedArguments(market, handle.workflowId, update, args);
  // the definition's argument tuple is checked by this function's signature
  const run = (handle.executeUpdate as (u: UpdateDefinition<R, A>, o: { args: A }) => Promise<R>).call(handle, update, { args: sent });
  try {
    return await withinDeadline(run, market.settings.workflowWaitMs, () => taskPending(task.taskId));
  } catch (err) {
    throw mapUpdateError(err, task.taskId);
  }
}

/**
 * The Update's argument bound to this workflow and Update with a fresh nonce (issue 26 item 1); for a
 * money-moving step, with the one-time authorisation row the workflow uses before it moves anything,
 * written now that the route has checked the caller (domain/stepAuthorisation.ts).
 */
async function authorisedArguments<A extends unknown[]>(market: Market, workflowId: string, update: UpdateDefinition<unknown, A>, args: A): Promise<A> {
  const [arg] = args;
  if (!arg || typeof arg !== 'object') return args;
  const sent = boundUpdateArgument({ workflowId }, update as unknown as UpdateDefinition<unknown, [object]>, arg);
  if (needsStepAuthorisation(update.name)) {
    const callerDid = (arg as { posterDid?: string }).posterDid ?? '';
    await recordStepAuthorisation(market.sql, { nonce: sent.binding.nonce, workflowId, message: update.name, callerDid, argsSha256: stepArgumentSha256(sent) });
  }
  return [sent] as unknown as A;
}

function mapUpdateError(err: unknown, taskId: string): unknown {
  if (err instanceof ApiError) return err; // WorkflowPending included
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === TASK_REFUSAL_TYPE) {
      const r = cause.details?.[0] as TaskRefusal | undefined;
      // the same party's same step is still running in the workflow: the 202 of a step still running
      if (r?.code === 'request_pending') return taskPending(taskId);
      if (r && typeof r.status === 'number') return refusalError(r);
      return new ApiError('invalid_request', cause.message);
    }
    return new ApiError('execution_failed', `The task step failed: ${cause instanceof Error ? cause.message : 'unknown error'}`, {
      hint: `Retry the request; GET /market/tasks/${taskId} shows the task's state`,
    });
  }
  if (err instanceof WorkflowNotFoundError) {
    return new ApiError('invalid_request', `Task ${taskId} takes no more steps`, { hint: `GET /market/tasks/${taskId} shows its final state` });
  }
  return new ApiError('service_unavailable', 'The task workflow could not be reached', { hint: 'Retry after 30 seconds' });
}
