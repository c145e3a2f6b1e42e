/**
 * A workflow's contract (issue 21): what a caller outside the workflow needs to start and drive it,
 * without importing the workflow's code.
 *
 *   type        the registered workflow type: the name of the function workflows/index.ts exports;
 *               running workflows and recorded histories name it, so it never changes
 *   workflowId  the business id of a run (what the Temporal UI shows; one run per id at a time)
 *   updates, signals, queries   the definitions (defineUpdate/defineSignal/defineQuery) callers use
 *   Input, Result               carried by the contract's type (see WorkflowOf): the workflow's one
 *                               argument and what it returns
 *
 * One file per workflow in workflows/contracts/, imported by the API (api/workflowCalls.ts
 * startOrAttach), the worker's schedules, scripts and tests; the workflow itself takes its input and
 * result types from the same file, and workflows/contractCheck.ts makes a workflow renamed, or given
 * another input or result than its contract says, a compile error. Contract files are bundle-safe:
 * type-only imports, or definitions from @temporalio/workflow.
 */
import type { QueryDefinition, SignalDefinition, UpdateDefinition } from '@temporalio/common';

export interface WorkflowContract<Input = any, Result = any, Type extends string = string> {
  readonly type: Type;
  /** the business id of a run, from its key (the API may put a scope in front: tests share one namespace) */
  readonly workflowId: (...key: any[]) => string;
  readonly updates: Readonly<Record<string, UpdateDefinition<any, any[]>>>;
  readonly signals: Readonly<Record<string, SignalDefinition<any[]>>>;
  readonly queries: Readonly<Record<string, QueryDefinition<any, any[]>>>;
  /** never set: carries the workflow's signature for the compiler */
  readonly __workflow?: (input: Input) => Promise<Result>;
}

/** The workflow function a contract describes: what Temporal's client generics take. */
export type WorkflowOf<C extends WorkflowContract> = NonNullable<C['__workflow']>;
export type InputOf<C extends WorkflowContract> = Parameters<WorkflowOf<C>>[0];
export type ResultOf<C extends WorkflowContract> = Awaited<ReturnType<WorkflowOf<C>>>;

interface ContractParts<Type extends string, Id extends (...key: any[]) => string, U, S, Q> {
  type: Type;
  workflowId: Id;
  updates?: U;
  signals?: S;
  queries?: Q;
}

/**
 * Builds a contract: `workflowContract<Input, Result>()({ type, workflowId, updates?, signals?, queries? })`
 * (two calls so Input and Result are named while the rest is inferred).
 */
export function workflowContract<Input, Result>() {
  return <
    const Type extends string,
    Id extends (...key: any[]) => string,
    U extends Record<string, UpdateDefinition<any, any[]>> = {},
    S extends Record<string, SignalDefinition<any[]>> = {},
    Q extends Record<string, QueryDefinition<any, any[]>> = {},
  >(
    parts: ContractParts<Type, Id, U, S, Q>,
  ): WorkflowContract<Input, Result, Type> & { workflowId: Id; updates: U; signals: S; queries: Q } => ({
    type: parts.type,
    workflowId: parts.workflowId,
    updates: parts.updates ?? ({} as U),
    signals: parts.signals ?? ({} as S),
    queries: parts.queries ?? ({} as Q),
  });
}
