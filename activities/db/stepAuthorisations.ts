/**
 * The activity a workflow runs before a money-moving step (issue 26 item 1; domain/stepAuthorisation.ts):
 * it uses the one-time authorisation the API wrote for exactly this message. The workflow and run come
 * from the activity's own context, never from its input: a workflow can only use rows written for it.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { stepArgumentSha256 } from '../../domain/stepAuthorisation.js';
import { useStepAuthorisation } from '../../db/queries/stepAuthorisations.js';

/** The failure type of a refused authorisation (final: no retry can make it valid). */
export const STEP_NOT_AUTHORISED = 'StepNotAuthorised';

export interface UseStepAuthorisationInput {
  /** the binding's nonce of the message (the row's key) */
  nonce: string;
  message: string;
  callerDid: string;
  /** the argument as the workflow received it (its binding is left out of the hash) */
  arg: object;
  /** the Update's id, or 'start' */
  step: string;
}

export function createStepAuthorisationActivities(deps: { sql: Sql }) {
  async function useStepAuthorisationOnce(input: UseStepAuthorisationInput): Promise<void> {
    const exec = Context.current().info.workflowExecution;
    if (!exec) throw ApplicationFailure.create({ type: STEP_NOT_AUTHORISED, message: 'a step authorisation is used only inside its workflow', nonRetryable: true });
    const use = await useStepAuthorisation(deps.sql, {
      nonce: input.nonce,
      workflowId: exec.workflowId,
      message: input.message,
      callerDid: input.callerDid,
      argsSha256: stepArgumentSha256(input.arg),
      usedBy: `${exec.runId}/${input.step}`,
    });
    if (use !== 'used') {
      throw ApplicationFailure.create({
        type: STEP_NOT_AUTHORISED,
        message: `${input.message} of ${exec.workflowId} is not authorised (${use})`,
        nonRetryable: true,
      });
    }
  }
  return { useStepAuthorisationOnce };
}

export type StepAuthorisationActivities = ReturnType<typeof createStepAuthorisationActivities>;
