/**
 * The marketplace's answers: the task record as answered (DESIGN 10, bookkeeping fields left out,
 * with _links), its escrow and a verify outcome (a step still running is a WorkflowPending,
 * answered 202 by the error handler).
 */
import { taskSchema } from '../schemas/market.js';
import { serializerFor } from '../serializer.js';
import { resultVisibleTo, type TaskRecord } from '../../domain/market.js';
import type { VerifyResult } from '../../workflows/contracts/taskLifecycle.js';
import type { Market } from './state.js';

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

type TaskView = Omit<TaskRecord, 'escrowedTinybars' | 'feeBps' | 'priceTinybars' | 'resultBody' | 'resultIpfs'> &
  Partial<Pick<TaskRecord, 'resultBody' | 'resultIpfs'>> & { _links: ReturnType<typeof taskLinks> };

/**
 * The answered views of each record, made once: records are immutable values (a change replaces the
 * object in the task book), so the anonymous reads from memory (the list, one task) cost no copy per
 * request.
 */
const PUBLIC_VIEWS = new WeakMap<TaskRecord, TaskView>();
const PARTY_VIEWS = new WeakMap<TaskRecord, TaskView>();

function viewOf(task: TaskRecord, withResult: boolean): TaskView {
  const { escrowedTinybars: _e, feeBps: _f, priceTinybars: _p, resultBody, resultIpfs, ...view } = task;
  return withResult ? { ...view, resultBody, resultIpfs, _links: taskLinks(task) } : { ...view, _links: taskLinks(task) };
}

/**
 * The task as answered to `viewerDid` (the DID its request proved, or none): the record of DESIGN 10
 * (bookkeeping fields left out) with _links. resultBody and resultIpfs are in it only when the viewer
 * may read the result (domain/market.ts resultVisibleTo: the parties until completion, then anyone);
 * otherwise they are left out, and resultSha256 and the status tell that a result was delivered.
 */
export function taskResponse(task: TaskRecord, viewerDid?: string): TaskView {
  const withResult = resultVisibleTo(task, viewerDid);
  const memo = withResult ? PARTY_VIEWS : PUBLIC_VIEWS;
  let view = memo.get(task);
  if (!view) memo.set(task, (view = viewOf(task, withResult)));
  return view;
}

/** The anonymous view (lists: a result is read one task at a time, signed by a party). */
export const publicTaskResponse = (task: TaskRecord): TaskView => taskResponse(task);

const serializeTask = serializerFor(taskSchema);
const PUBLIC_JSON = new WeakMap<TaskRecord, string>();

/** The anonymous view serialised (compiled taskSchema serialiser), once per record: lists are concatenations of these. */
export function publicTaskJson(task: TaskRecord): string {
  let json = PUBLIC_JSON.get(task);
  if (json === undefined) PUBLIC_JSON.set(task, (json = serializeTask(taskResponse(task))));
  return json;
}

/** GET /market/tasks/{taskId}/escrow-status. */
export function escrowStatusView(market: Market, t: TaskRecord) {
  const deployment = market.ledger.deployment;
  return {
    taskId: t.taskId,
    scheduleId: t.scheduleId,
    topUpScheduleId: t.topUpScheduleId,
    escrowStatus: t.escrowStatus,
    verificationAttempts: t.verificationAttempts,
    verifierType: t.verifierType,
    priceHbar: t.priceHbar,
    escrowAccountId: deployment.escrow,
    _links: {
      task: { href: `/market/tasks/${t.taskId}` },
      ...(t.scheduleId ? { schedule: { href: `${deployment.mirrorUrl.replace(/\/$/, '')}/api/v1/schedules/${t.scheduleId}` } } : {}),
    },
  };
}

/** A verify's answer: the kept outcome of the delivery (reused, no verifier ran) or the outcome of the run just made. */
export function verifyView(outcome: { kept: TaskRecord } | { ran: VerifyResult; taskId: string }) {
  if ('kept' in outcome) {
    const task = outcome.kept;
    const kept = task.verification!;
    return {
      taskId: task.taskId,
      passed: kept.passed,
      reasons: kept.reasons,
      verificationAttempts: task.verificationAttempts,
      verifierType: task.verifierType,
      status: task.status,
      verifiedAt: kept.at,
      reused: true,
    };
  }
  const result = outcome.ran;
  return {
    taskId: outcome.taskId,
    passed: result.passed,
    reasons: result.reasons,
    verificationAttempts: result.verificationAttempts,
    verifierType: result.task.verifierType,
    status: result.task.status,
    ...(result.verifiedAt !== undefined ? { verifiedAt: result.verifiedAt, reused: result.reused ?? false } : {}),
  };
}
