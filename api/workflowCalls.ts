/**
 * How routes drive workflows: start (or attach to the running one with the same business id),
 * wait a bounded time for the result, and answer 202 request_pending with a link to poll when the
 * workflow is still running, never a hanging request.
 */
import type { FastifyReply } from 'fastify';
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { Workflow, WorkflowIdReusePolicy, WorkflowResultType } from '@temporalio/common';
import { startWorkflow, workflowHandle } from '../temporal/workflows.js';
import type { InputOf, WorkflowContract, WorkflowOf } from '../workflows/contracts/contract.js';
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

/**
 * Starts the contract's workflow (workflows/contracts/), or attaches to the running one with the same
 * id. The contract names the workflow type and types the input and the handle's result.
 */
export async function startOrAttach<C extends WorkflowContract>(
  ctx: AppContext,
  contract: C,
  workflowId: string,
  input: InputOf<C>,
  display: StartDisplay = {},
): Promise<WorkflowHandle<WorkflowOf<C>>> {
  const client = await temporalClient(ctx);
  try {
    return await startWorkflow(client, contract, input, { taskQueue: ctx.config.TEMPORAL_TASK_QUEUE, workflowId, ...display });
  } catch (err) {
    if (err instanceof WorkflowExecutionAlreadyStartedError) return workflowHandle(client, contract, workflowId);
    throw new ApiError('service_unavailable', 'The workflow could not be started', { hint: 'Retry the same request after 30 seconds' });
  }
}

/** what the Temporal UI shows for the run (summary line, details); REJECT_DUPLICATE: a closed run is never started again */
export interface StartDisplay {
  staticSummary?: string;
  staticDetails?: string;
  workflowIdReusePolicy?: WorkflowIdReusePolicy;
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
  return (await latestWorkflowRun(ctx, workflowId))?.running ?? null;
}

/**
 * The latest run of a workflow id: whether it runs and its run id (null when there is no run), or
 * null when Temporal cannot be asked.
 */
export async function latestWorkflowRun(ctx: AppContext, workflowId: string): Promise<{ running: boolean; runId: string | null } | null> {
  let client: Client;
  try {
    client = await temporalClient(ctx);
  } catch {
    return null;
  }
  try {
    const d = await client.workflow.getHandle(workflowId).describe();
    return { running: d.status.name === 'RUNNING', runId: d.runId };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return { running: false, runId: null };
    return null;
  }
}

/**
 * The workflow's result (typed by the handle's contract), PENDING after waitMs, or an ApiError 502
 * when the workflow failed. T names the result where the compiler cannot work it out from a handle
 * whose contract is itself a type parameter (api/passports/paidRequest.ts).
 */
export async function waitForResult<T = never, W extends Workflow = Workflow>(
  handle: WorkflowHandle<W>,
  waitMs: number,
): Promise<([T] extends [never] ? WorkflowResultType<W> : T) | typeof PENDING> {
  type R = [T] extends [never] ? WorkflowResultType<W> : T;
  const result = handle.result() as Promise<R>;
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

