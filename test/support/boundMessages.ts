/**
 * For tests that drive a task's workflow without the API (issue 26 item 1): start it as the posting
 * route does (its input bound to the workflow, with the authorisation row the workflow uses before
 * it posts), and bind Update arguments as the API does.
 */
import type { Client } from '@temporalio/client';
import type { Sql } from 'postgres';
import { recordStepAuthorisation } from '../../db/queries/stepAuthorisations.js';
import { stepArgumentSha256 } from '../../domain/stepAuthorisation.js';
import { bound, startWorkflow } from '../../temporal/workflows.js';
import { taskLifecycleContract, type TaskLifecycleInput } from '../../workflows/contracts/taskLifecycle.js';

export async function startAuthorisedTask(sql: Sql, client: Client, input: TaskLifecycleInput, options: { taskQueue: string; workflowId: string }) {
  const sent = bound(input, options.workflowId, taskLifecycleContract.type);
  await recordStepAuthorisation(sql, { nonce: sent.binding.nonce, workflowId: options.workflowId, message: taskLifecycleContract.type, callerDid: input.task.posterDid, argsSha256: stepArgumentSha256(sent) });
  return startWorkflow(client, taskLifecycleContract, sent, options);
}

export { boundUpdateArgument } from '../../temporal/workflows.js';
