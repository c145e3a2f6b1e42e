/**
 * Each step of a task runs alone, and a retried step never runs twice (the step mutex and dedup of
 * the taskLifecycle workflow):
 *
 *   exclusive(fn)          runs fn under the task's mutex (posting holds it from the start)
 *   repeats / repeated     a repeat of a step already taken or being taken (domain/market.ts
 *                          repeatsStep: a retry whose answer was lost), answered with the task
 *   refuseInFlight/tracked the same party's same step arriving while its first Update is still
 *                          queued or running is answered "still running" (202 at the API)
 *
 * Only state and patched(): histories replay as they were (validators do not run on replay).
 */
import { condition, patched } from '@temporalio/workflow';
import { repeatsStep, type RepeatableStep, type StepRequest } from '../../domain/market.js';
import { refuse } from './refusals.js';
import { REPEATED_STEP_PATCH, type TaskRun } from './run.js';

export function stepMutex(run: TaskRun) {
  async function exclusive<T>(fn: () => Promise<T>): Promise<T> {
    await condition(() => !run.busy);
    run.busy = true;
    try {
      return await fn();
    } finally {
      run.busy = false;
      run.version++;
    }
  }

  /**
   * A repeat of a step already taken or being taken. The validator accepts it (the step's new
   * status is set before its commit ends, so a retry during the commit would otherwise be refused);
   * the handler, under the mutex, so after the running step, answers the task as it is without
   * running anything. Histories from before this rule replay the refusal they recorded (patched).
   */
  const repeats = (op: RepeatableStep, req: StepRequest) => repeatsStep(op, run.task, req);
  const repeated = (op: RepeatableStep, req: StepRequest) => repeats(op, req) && patched(REPEATED_STEP_PATCH);

  /**
   * Steps in flight per party: an Update accepted and not answered yet (waiting for the mutex or
   * running). The same party's same step arriving meanwhile is answered "still running" by its
   * validator (202 at the API) instead of queueing a second Update behind the first: a queued retry
   * holds bytes signed at its request time (valid 120 s) that can expire before its turn, and a client
   * retrying a slow step would queue them faster than they drain.
   */
  const inFlight = new Map<string, StepRequest>();
  /** the same request: the same party, and for deliver the same result (another result is another delivery) */
  const sameRequest = (a: StepRequest, b: StepRequest) => a.callerDid === b.callerDid && a.resultBody === b.resultBody && a.resultIpfs === b.resultIpfs;
  const refuseInFlight = (op: RepeatableStep, req: StepRequest) => {
    const running = inFlight.get(`${op} ${req.callerDid}`);
    if (!running || !sameRequest(running, req)) return;
    const taskId = run.task.taskId;
    refuse({ kind: 'invalid', code: 'request_pending', status: 202, message: `The ${op} of task ${taskId} by ${req.callerDid} is still running`, hint: `Poll GET /market/tasks/${taskId}` });
  };
  async function tracked<T>(op: RepeatableStep, req: StepRequest, fn: () => Promise<T>): Promise<T> {
    const k = `${op} ${req.callerDid}`;
    inFlight.set(k, req);
    try {
      return await fn();
    } finally {
      if (inFlight.get(k) === req) inFlight.delete(k);
    }
  }

  return { exclusive, repeats, repeated, refuseInFlight, tracked };
}

export type StepMutex = ReturnType<typeof stepMutex>;
