/**
 * How routes drive workflows: start (or attach to the running one with the same business id),
 * wait a bounded time for the result, and answer 202 request_pending with a link to poll when the
 * workflow is still running, never a hanging request.
 */
import type { FastifyReply } from 'fastify';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { WorkflowIdReusePolicy } from '@temporalio/common';
import type { AppContext } from './context.js';
import { ApiError, errorBody } from './errors.js';

export async function temporalClient(ctx: AppContext): Promise<Client> {
  if (!ctx.temporal) throw new ApiError('service_unavailable', 'Workflows are not configured', { hint: 'Retry after 30 seconds' });
  try {
    return await ctx.temporal();
  } catch {
    throw new ApiError('service_unavailable', 'The workflow service is unavailable', { hint: 'Retry after 30 seconds' });
  }
}

/** Starts a workflow, or attaches to the running one with the same id. */
export async function startOrAttach(
  ctx: AppContext,
  workflowType: string,
  workflowId: string,
  arg: unknown,
  /** what the Temporal UI shows for the run (summary line, details); REJECT_DUPLICATE: a closed run is never started again */
  display: { staticSummary?: string; staticDetails?: string; workflowIdReusePolicy?: WorkflowIdReusePolicy } = {},
): Promise<WorkflowHandle> {
  const client = await temporalClient(ctx);
  try {
    return await client.workflow.start(workflowType, { taskQueue: ctx.config.TEMPORAL_TASK_QUEUE, workflowId, args: [arg], ...display });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return client.workflow.getHandle(workflowId);
    throw new ApiError('service_unavailable', 'The workflow could not be started', { hint: 'Retry the same request after 30 seconds' });
  }
}

const PENDING = Symbol('pending');

/** The workflow ended without a result (failed, terminated, cancelled, timed out): 502 execution_failed. */
export class WorkflowRunFailed extends ApiError {
  constructor(readonly workflowId: string, readonly failure: unknown) {
    super('execution_failed', `Workflow ${workflowId} failed`, { hint: 'Retry the request; no passport change was made' });
  }
}

/**
 * Whether the latest run of a workflow id is running: true, false (closed or never started), or
 * null when Temporal cannot be asked (then nothing may be concluded).
 */
export async function workflowRunning(ctx: AppContext, workflowId: string): Promise<boolean | null> {
  let client: Client;
  try {
    client = await temporalClient(ctx);
  } catch {
    return null;
  }
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return d.status.name === 'RUNNING';
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    return null;
  }
}

/** The workflow's result, PENDING after waitMs, or an ApiError 502 when the workflow failed. */
export async function waitForResult<T>(handle: WorkflowHandle, waitMs: number): Promise<T | typeof PENDING> {
  const result = handle.result() as Promise<T>;
  result.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof PENDING>((resolve) => {
    timer = setTimeout(() => resolve(PENDING), waitMs);
  });
  try {
    return await Promise.race([result, timeout]);
  } catch (err) {
    if (err instanceof WorkflowFailedError) throw new WorkflowRunFailed(handle.workflowId, err);
    throw new ApiError('service_unavailable', 'The workflow result could not be read', { hint: `Poll again later (workflow ${handle.workflowId})` });
  } finally {
    clearTimeout(timer);
  }
}

export function isPending(v: unknown): v is typeof PENDING {
  return v === PENDING;
}

export function pendingReply(reply: FastifyReply, workflowId: string, pollUrl: string) {
  return reply
    .code(202)
    .header('location', pollUrl)
    .send({
      ...errorBody('request_pending', 'The request was accepted and is still running', `Poll ${pollUrl}`),
      workflowId,
      _links: { poll: { href: pollUrl } },
    });
}

