/**
 * Who may move a task's money (issue 26 item 1; DESIGN 12 "Money integrity II"). A DID string in an
 * Update argument is a claim, not proof: an argument must be bound to this workflow and Update with a
 * fresh nonce (workflows/binding.ts), and a money-moving step (complete, cancel, increaseReward) and
 * the task's start act only after using the one-time authorisation row the API wrote when it checked
 * the caller's DID signature (activities/db/stepAuthorisations.ts). A ciphertext copied from another
 * history, or a message forged with a leaked payload codec key, moves nothing.
 */
import { ActivityFailure, ApplicationFailure, currentUpdateInfo, patched } from '@temporalio/workflow';
import type { AuthorisedTaskUpdate } from '../../domain/stepAuthorisation.js';
import type { Bound } from '../contracts/binding.js';
import { BOUND_MESSAGES_PATCH, UNBOUND_MESSAGE, updateNonces } from '../binding.js';
import { refuse } from './refusals.js';
import type { TaskActivities, TaskRun } from './run.js';

/** activities/db/stepAuthorisations.ts STEP_NOT_AUTHORISED (kept here: workflows import activity types only) */
const STEP_NOT_AUTHORISED = 'StepNotAuthorised';

export function taskAuthority(run: TaskRun, durable: TaskActivities['durable'], carriedNonces?: readonly string[]) {
  const nonces = updateNonces(carriedNonces);
  const taskId = run.task.taskId;

  function refused(message: string, why: string): never {
    refuse({ kind: 'invalid', code: 'auth_did_mismatch', status: 403, message: `The ${message} of task ${taskId} was refused: ${why}`, hint: 'Send the request to the API, signed by the party it names' });
    throw new Error('unreachable');
  }

  /** validator: the argument is bound to this workflow and Update, with a nonce not seen before */
  function checkBound(arg: unknown, message: string): void {
    const p = nonces.problem(arg, message);
    if (p) refused(message, p);
  }

  /** handler, first thing (before any await): the nonce is used up */
  function useBound(arg: unknown, message: string): void {
    const p = nonces.use(arg);
    if (p) refused(message, p);
  }

  /**
   * Before a money-moving step (or the posting) moves anything: uses the authorisation row written for
   * exactly this argument. Steps recorded before the binding replay without it (patched).
   */
  async function authorise(arg: Bound, message: AuthorisedTaskUpdate | 'taskLifecycle', callerDid: string): Promise<void> {
    if (!patched(BOUND_MESSAGES_PATCH)) return;
    const nonce = arg.binding?.nonce;
    if (!nonce) refused(message, 'it carries no authorisation');
    try {
      await durable.useStepAuthorisationOnce({ nonce, message, callerDid, arg, step: currentUpdateInfo()?.id ?? 'start' });
    } catch (err) {
      const cause = err instanceof ActivityFailure ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === STEP_NOT_AUTHORISED) refused(message, 'the service did not authorise it');
      throw err;
    }
  }

  /**
   * Before the posting writes anything: the start uses the row the API wrote when it checked the
   * poster. Refused, the run fails with nothing written (a copy of a start input, sent again after the
   * task's workflow closed, finds its row used by the first run).
   */
  async function authoriseStart(input: Bound, posterDid: string): Promise<void> {
    try {
      await authorise(input, 'taskLifecycle', posterDid);
    } catch (err) {
      if (err instanceof ApplicationFailure && err.type !== UNBOUND_MESSAGE) {
        throw ApplicationFailure.create({ type: UNBOUND_MESSAGE, message: err.message, nonRetryable: true });
      }
      throw err;
    }
  }

  return { checkBound, useBound, authorise, authoriseStart, carriedNonces: () => nonces.carried() };
}

export type TaskAuthority = ReturnType<typeof taskAuthority>;
