/**
 * How routes drive workflows: start (or attach to the running one with the same business id),
 * wait a bounded time for the result (or an Update's, api/market/updates.ts), and throw WorkflowPending
 * when the workflow is still running: the error handler answers it 202 request_pending with a link to
 * poll, never a hanging request.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowFailedError, WorkflowNotFoundError, type Client, type WorkflowHandle } from '@temporalio/client';
import type { Workflow, WorkflowIdReusePolicy, WorkflowResultType } from '@temporalio/common';
import { startWorkflow, workflowHandle } from '../temporal/workflows.js';
import type { InputOf, WorkflowContract, WorkflowOf } from '../workflows/contracts/contract.js';
import type { AppContext } from './context.js';
import { ApiError } from './errors.js';

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

/** The workflow ended without a result (failed, terminated, cancelled, timed out): 502 execution_failed. */
export class WorkflowRunFailed extends ApiError {
  constructor(readonly workflowId: string, readonly failure: unknown) {
    super('execution_failed', `Workflow ${workflowId} failed`, { hint: 'Retry the request; no passport change was made' });
  }
}

/**
 * The one "still running" answer of the API (SPEC: never a hanging request): the work was accepted,
 * its workflow (or the workflow's Update) is still running after the app's bounded wait
 * (`app.workflowSettings.workflowWaitMs`). Orchestration throws it; the error handler
 * (api/plugins/errorHandler.ts) answers it like every ApiError: 202 request_pending, Location and
 * _links.poll naming where to poll, and the workflow's id (pendingBodySchema, api/schemas/common.ts).
 */
export class WorkflowPending extends ApiError {
  constructor(readonly workflowId: string, readonly pollUrl: string, message = 'The request was accepted and is still running') {
    super('request_pending', message, { hint: `Poll ${pollUrl}`, headers: { location: pollUrl }, extra: { workflowId, _links: { poll: { href: pollUrl } } } });
  }
}

/**
 * `work` (a workflow's result or an Update's), or WorkflowPending from `pending()` once `waitMs` has
 * passed: the one bounded wait of the API. A failure of `work` after the deadline is ignored (the
 * workflow records it; a poll shows it).
 */
export async function withinDeadline<T>(work: Promise<T>, waitMs: number, pending: () => WorkflowPending): Promise<T> {
  work.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(pending()), waitMs);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
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
 * The workflow's result (typed by the handle's contract), waited for at most `waitMs`: then
 * WorkflowPending naming `pollUrl`; an ApiError 502 when the workflow failed. T names the result
 * where the compiler cannot work it out from a handle whose contract is itself a type parameter
 * (api/passports/issuance.ts).
 */
export async function waitForResult<T = never, W extends Workflow = Workflow>(
  handle: WorkflowHandle<W>,
  waitMs: number,
  pollUrl: string,
): Promise<[T] extends [never] ? WorkflowResultType<W> : T> {
  type R = [T] extends [never] ? WorkflowResultType<W> : T;
  try {
    return await withinDeadline(handle.result() as Promise<R>, waitMs, () => new WorkflowPending(handle.workflowId, pollUrl));
  } catch (err) {
    if (err instanceof WorkflowPending) throw err;
    if (err instanceof WorkflowFailedError) throw new WorkflowRunFailed(handle.workflowId, err);
    throw new ApiError('service_unavailable', 'The workflow result could not be read', { hint: `Poll again later (workflow ${handle.workflowId})` });
  }
}
