/**
 * What every marketplace route file (api/routes/market/*.ts) shares:
 *
 *   marketState(ctx)        per-app state: the task book (memory, NOTIFY-fed), workflow waits and the
 *                           timings handed to new task workflows (tests shorten them), and the
 *                           `directPayment` hook part 2's payment.ts installs for complete without escrow
 *   loadTask(state, id)     the task as its last step wrote it (PostgreSQL), for step routes; 404 market_task_not_found
 *   readTask(state, id)     the task from memory (NOTIFY-fed), for read routes
 *   runTaskUpdate(...)      runs a taskLifecycle Update and maps its refusal (validator or handler,
 *                           a TaskRefusal ApplicationFailure) to the SPEC status; 202 request_pending
 *                           when the step is still running after the bounded wait
 *   refuseEarly(...)        the same refusal answered from the cached record before any Update
 *   requireActivePassport   403 passport_not_found unless the DID's passport is active and held on the ledger
 *   signScheduleSigns       ScheduleSign transactions signed in memory by the poster's key (only bytes leave)
 *   taskResponse            the task record with _links
 */
import type { FastifyReply } from 'fastify';
import { ScheduleSignTransaction, ScheduleId, TransactionId, AccountId, type PrivateKey } from '@hashgraph/sdk';
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import type { UpdateDefinition } from '@temporalio/common';
import type { AppContext } from '../../context.js';
import { ApiError, echo } from '../../errors.js';
import { errorBody } from '../../errors.js';
import { temporalClient } from '../../workflowCalls.js';
import { isCatalogCode } from '../../../domain/errors.js';
import { parseHederaDid, type HederaDid } from '../../../domain/did.js';
import { refusalOf, type TaskOperation, type TaskRecord, type TaskRefusal } from '../../../domain/market.js';
import { heldActivePassport } from '../../heldPassport.js';
import { findTask } from '../../../db/queries/tasks.js';
import { clientNodeAccountIds } from '../../../ledger/client.js';
import { signTransaction } from '../../../ledger/keys.js';
import { TASK_REFUSAL_TYPE, taskWorkflowId, type ScheduleSignBytes, type TaskTimings } from '../../../workflows/taskTypes.js';
import { TaskBook } from './taskBook.js';

/** How long a route waits for a task step before answering 202 with a link to poll. */
export const TASK_WAIT_MS = 20_000;

export interface DirectPaymentInput {
  task: TaskRecord;
  body: { posterDid: string; posterPrivateKey?: string; txBytes?: string; publicKey?: string; signature?: string };
}

export interface MarketState {
  book: TaskBook;
  workflowWaitMs: number;
  /** timings handed to new task workflows (tests use seconds) */
  taskTimings?: TaskTimings;
  /**
   * Complete without escrow (part 2, payment.ts): checks the client-signed transfer (or signs one with
   * posterPrivateKey) for exactly price - fee to the claimer and the fee to the treasury and returns the
   * signed transfer bytes (base64). Unset: complete without escrow answers 400.
   */
  directPayment?: (input: DirectPaymentInput) => Promise<string>;
}

const STATES = new WeakMap<object, MarketState>();

/** The market state of an app (keyed by its ledger context, so a test holding it can shorten waits). */
export function marketState(ctx: AppContext): MarketState {
  const key = ctx.ledger!;
  let s = STATES.get(key);
  if (!s) {
    s = { book: new TaskBook(ctx.sql!), workflowWaitMs: TASK_WAIT_MS };
    STATES.set(key, s);
  }
  return s;
}

export function taskNotFound(taskId: string): ApiError {
  return new ApiError('market_task_not_found', `Task ${echo(taskId)} does not exist`, { hint: 'GET /market/tasks lists the tasks' });
}

/**
 * The task as the last finished step wrote it, from PostgreSQL (one primary-key read), for the routes
 * that take a step: a step's projection is written before its Update answers, so a client that sends
 * the next step at once is checked against it, while this process's memory may still be a NOTIFY
 * behind. 404 market_task_not_found.
 */
export async function loadTask(state: MarketState, taskId: string): Promise<TaskRecord> {
  if (!/^[0-9a-f-]{36}$/i.test(taskId)) throw taskNotFound(taskId);
  const row = await findTask(state.book.sql, taskId.toLowerCase());
  if (!row) throw taskNotFound(taskId);
  return row.record;
}

/** The task for the read routes: from memory (NOTIFY-fed), PostgreSQL when this process has not heard of it yet. */
export async function readTask(state: MarketState, taskId: string): Promise<TaskRecord> {
  await state.book.ready();
  return state.book.get(taskId) ?? loadTask(state, taskId);
}

export function refusalError(r: TaskRefusal): ApiError {
  const code = isCatalogCode(r.code) ? r.code : 'invalid_request';
  return new ApiError(code, r.message, { status: r.status, hint: r.hint });
}

/** Answers the SPEC status from the cached record before any Update (the workflow checks again). */
export function refuseEarly(op: TaskOperation, task: TaskRecord, callerDid?: string): void {
  const r = refusalOf(op, task, callerDid);
  if (r) throw refusalError(r);
}

export class TaskPending extends Error {
  constructor(readonly taskId: string) {
    super(`task ${taskId} step still running`);
  }
}

/**
 * Runs an Update of the task's workflow and returns its result. A refusal (validator or handler)
 * becomes the ApiError of its TaskRefusal (SPEC statuses); a step still running after the bounded
 * wait throws TaskPending (answer it with pendingTask); a closed or missing workflow answers from
 * the record (refusal or 404).
 */
export async function runTaskUpdate<R, A extends unknown[]>(
  ctx: AppContext,
  task: Pick<TaskRecord, 'taskId'>,
  update: UpdateDefinition<R, A>,
  ...args: A
): Promise<R> {
  const state = marketState(ctx);
  const client = await temporalClient(ctx);
  const handle = client.workflow.getHandle(taskWorkflowId(task.taskId));
  let timer: NodeJS.Timeout | undefined;
  const pending = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new TaskPending(task.taskId)), state.workflowWaitMs);
  });
  // the definition's argument tuple is checked by this function's signature
  const run = (handle.executeUpdate as (u: UpdateDefinition<R, A>, o: { args: A }) => Promise<R>).call(handle, update, { args });
  run.catch(() => undefined);
  try {
    return await Promise.race([run, pending]);
  } catch (err) {
    throw mapUpdateError(err, task.taskId);
  } finally {
    clearTimeout(timer);
  }
}

function mapUpdateError(err: unknown, taskId: string): unknown {
  if (err instanceof TaskPending || err instanceof ApiError) return err;
  if (err instanceof WorkflowUpdateFailedError) {
    const cause = err.cause;
    if (cause instanceof ApplicationFailure && cause.type === TASK_REFUSAL_TYPE) {
      const r = cause.details?.[0] as TaskRefusal | undefined;
      // the same party's same step is still running in the workflow: the 202 of a step still running
      if (r?.code === 'request_pending') return new TaskPending(taskId);
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

/** 202 request_pending: the step is still running; the task's URL shows when it is done. */
export function pendingTask(reply: FastifyReply, taskId: string) {
  const poll = `/market/tasks/${taskId}`;
  return reply
    .code(202)
    .header('location', poll)
    .send({ ...errorBody('request_pending', 'The task step was accepted and is still running', `Poll ${poll}`), workflowId: taskWorkflowId(taskId), _links: { poll: { href: poll } } });
}

/** Parses a DID of this network; 400 otherwise. */
export function partyOf(ctx: AppContext, did: string, field: string): HederaDid {
  const network = ctx.ledger!.deployment.network;
  const parsed = parseHederaDid(did);
  if (!parsed || parsed.network !== network) {
    throw new ApiError('invalid_request', `${field} ${echo(did)} is not a DID of ${network}`, { hint: `Use did:hedera:${network}:<accountId>` });
  }
  return parsed;
}

/** 403 passport_not_found unless the DID's passport is active in the projection and held by it on the ledger. */
export async function requireActivePassport(ctx: AppContext, party: HederaDid, role: string): Promise<void> {
  if (!(await heldActivePassport(ctx, party.accountId))) {
    throw new ApiError('passport_not_found', `The ${role} ${party.did} has no active passport (missing or revoked)`, {
      status: 403,
      hint: 'Buy a passport with POST /passport/request first',
    });
  }
}

/** The schedules of a task still waiting for the poster's signature. */
export function pendingSchedules(task: TaskRecord): string[] {
  const ids: string[] = [];
  if (task.escrowStatus === 'scheduled' && task.scheduleId) ids.push(task.scheduleId);
  if (task.topUpScheduleId) ids.push(task.topUpScheduleId);
  return ids;
}

/**
 * ScheduleSign transactions for the given schedules, paid by the service's operator (so the poster's
 * balance moves by the escrowed amount only) and signed here, in memory, by the poster's key. Only the
 * signed bytes go to the workflow; the key is dropped when this returns.
 */
export async function signScheduleSigns(ctx: AppContext, scheduleIds: string[], posterKey: PrivateKey): Promise<ScheduleSignBytes[]> {
  const ledger = ctx.ledger!;
  const node = ledger.deployment.node?.accountId ?? clientNodeAccountIds(ledger.client)[0].toString();
  const out: ScheduleSignBytes[] = [];
  for (const scheduleId of scheduleIds) {
    const tx = new ScheduleSignTransaction()
      .setScheduleId(ScheduleId.fromString(scheduleId))
      .setTransactionId(TransactionId.generate(AccountId.fromString(ledger.deployment.operator.accountId)))
      .setNodeAccountIds([AccountId.fromString(node)])
      .freeze();
    await signTransaction(tx, posterKey);
    out.push({ scheduleId, signedBytes: Buffer.from(tx.toBytes()).toString('base64') });
  }
  return out;
}

export function taskLinks(task: TaskRecord): Record<string, { href: string; method?: 'GET' | 'POST' }> {
  const base = `/market/tasks/${task.taskId}`;
  const links: Record<string, { href: string; method?: 'GET' | 'POST' }> = {
    self: { href: base },
    escrow: { href: `${base}/escrow-status` },
    poster: { href: `/agents/${encodeURIComponent(task.posterDid)}` },
  };
  if (task.claimerDid) links.claimer = { href: `/agents/${encodeURIComponent(task.claimerDid)}` };
  const post = (name: string, path: string) => (links[name] = { href: `${base}/${path}`, method: 'POST' });
  if (task.status === 'posted') post('claim', 'claim');
  if (task.status === 'claimed') post('deliver', 'deliver');
  if (task.status === 'delivered') {
    post('verify', 'verify');
    post('complete', 'complete');
    if (!task.escrow) post('preparePayment', 'prepare-payment');
  }
  if (task.status === 'posted' || task.status === 'claimed') post('increaseReward', 'increase-reward');
  if (task.status === 'posted' || task.status === 'claimed' || task.status === 'delivered') post('cancel', 'cancel');
  return links;
}

/** The task as answered: the record of DESIGN 10 (bookkeeping fields left out) with _links. */
export function taskResponse(task: TaskRecord) {
  const { escrowedTinybars: _e, feeBps: _f, priceTinybars: _p, ...view } = task;
  return { ...view, _links: taskLinks(task) };
}
