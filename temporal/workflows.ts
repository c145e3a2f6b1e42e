/**
 * Starting and reaching workflows through their contracts (workflows/contracts/), never by a type
 * name string: the contract names the registered type and types the input, the result and the
 * handle, so a renamed workflow or a changed input is a compile error at every caller. The API's
 * start-or-attach (api/workflowCalls.ts), the worker's start-up starts and schedules, scripts and
 * tests all go through here.
 */
import type { Client, ScheduleOptionsStartWorkflowAction, WorkflowHandle, WorkflowHandleWithStartDetails, WorkflowOptions, WorkflowStartOptions } from '@temporalio/client';
import type { InputOf, WorkflowContract, WorkflowOf } from '../workflows/contracts/contract.js';

/** Temporal's start options without the workflow's arguments (the contract's one input takes their place). */
export type ContractStartOptions = WorkflowOptions;

/** Starts the contract's workflow with its input (WorkflowExecutionAlreadyStartedError when the id runs already, as Temporal's start). */
export function startWorkflow<C extends WorkflowContract>(
  client: Client,
  contract: C,
  input: InputOf<C>,
  options: ContractStartOptions,
): Promise<WorkflowHandleWithStartDetails<WorkflowOf<C>>> {
  // the contract's input is the workflow's one argument (the generic tuple is beyond the compiler here)
  return client.workflow.start<WorkflowOf<C>>(contract.type, { ...options, args: [input] } as unknown as WorkflowStartOptions<WorkflowOf<C>>);
}

/** The handle of a run of the contract's workflow (its updates, queries and result typed by the contract). */
export function workflowHandle<C extends WorkflowContract>(client: Client, _contract: C, workflowId: string): WorkflowHandle<WorkflowOf<C>> {
  return client.workflow.getHandle<WorkflowOf<C>>(workflowId);
}

/** A Temporal Schedule's action starting the contract's workflow with its input. */
export function scheduleStartAction<C extends WorkflowContract>(
  contract: C,
  input: InputOf<C>,
  options: Omit<ScheduleOptionsStartWorkflowAction<WorkflowOf<C>>, 'type' | 'workflowType' | 'args'>,
): ScheduleOptionsStartWorkflowAction<WorkflowOf<C>> {
  return { ...options, type: 'startWorkflow', workflowType: contract.type, args: [input] } as ScheduleOptionsStartWorkflowAction<WorkflowOf<C>>;
}
