/**
 * Starting and reaching workflows through their contracts (workflows/contracts/), never by a type
 * name string: the contract names the registered type and types the input, the result and the
 * handle, so a renamed workflow or a changed input is a compile error at every caller. The API's
 * start-or-attach (api/workflowCalls.ts), the worker's start-up starts and schedules, scripts and
 * tests all go through here.
 */
import { randomUUID } from 'node:crypto';
import type { Client, ScheduleOptionsStartWorkflowAction, WorkflowHandle, WorkflowHandleWithStartDetails, WorkflowOptions, WorkflowStartOptions } from '@temporalio/client';
import type { SignalDefinition, UpdateDefinition } from '@temporalio/common';
import type { Bound, MessageBinding } from '../workflows/contracts/binding.js';
import type { InputOf, WorkflowContract, WorkflowOf } from '../workflows/contracts/contract.js';

/** Temporal's start options without the workflow's arguments (the contract's one input takes their place). */
export type ContractStartOptions = WorkflowOptions;

/** The binding of a message written now for `workflowId` (workflows/contracts/binding.ts): a fresh nonce each time. */
export function messageBinding(workflowId: string, message: string): MessageBinding {
  return { workflowId, message, nonce: randomUUID() };
}

/**
 * The argument with its binding for `workflowId` and `message`: a binding it already carries for
 * exactly these is kept (the caller recorded an authorisation of it), any other is replaced.
 */
export function bound<T extends object>(arg: T, workflowId: string, message: string): T & Required<Bound> {
  const b = (arg as Bound).binding;
  if (b && b.workflowId === workflowId && b.message === message && b.nonce) return arg as T & Required<Bound>;
  return { ...arg, binding: messageBinding(workflowId, message) };
}

/**
 * Starts the contract's workflow with its input, bound to the workflow id and type (issue 26 item 1)
 * (WorkflowExecutionAlreadyStartedError when the id runs already, as Temporal's start).
 */
export function startWorkflow<C extends WorkflowContract>(
  client: Client,
  contract: C,
  input: InputOf<C>,
  options: ContractStartOptions,
): Promise<WorkflowHandleWithStartDetails<WorkflowOf<C>>> {
  const args = [bound(input as object, options.workflowId, contract.type)];
  // the contract's input is the workflow's one argument (the generic tuple is beyond the compiler here)
  return client.workflow.start<WorkflowOf<C>>(contract.type, { ...options, args } as unknown as WorkflowStartOptions<WorkflowOf<C>>);
}

/**
 * Signals the contract's workflow, starting it first with its input (bound like startWorkflow's)
 * when no run of the id is open: how a workflow that must exist for as long as its row does is
 * kept alive and nudged at once (worker/webhookWaker.ts).
 */
export function signalWithStartWorkflow<C extends WorkflowContract>(
  client: Client,
  contract: C,
  input: InputOf<C>,
  signal: SignalDefinition<[]>,
  options: ContractStartOptions,
): Promise<WorkflowHandle<WorkflowOf<C>>> {
  const args = [bound(input as object, options.workflowId, contract.type)];
  return client.workflow.signalWithStart<WorkflowOf<C>, []>(contract.type, { ...options, args, signal, signalArgs: [] } as never);
}

/**
 * Runs an Update whose one argument is bound to the handle's workflow, the Update's name and a fresh
 * nonce (issue 26 item 1): the only way the service sends an Update with an argument. Returns the
 * bound argument too, for a caller that records an authorisation of exactly this message.
 */
export function boundUpdateArgument<A extends object>(handle: { workflowId: string }, update: UpdateDefinition<unknown, [A]>, arg: A): A & Required<Bound> {
  return bound(arg, handle.workflowId, update.name);
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
