/**
 * Compile-time check that workflows/index.ts exports, under each contract's type name, a workflow
 * taking the contract's input and returning its result (workflows/contracts/). A workflow renamed
 * (its registered type changes), or given another input or result than its contract, fails
 * `npm run typecheck` and `npm run build` here, naming the contract's type. Types only: nothing
 * imports this file and it emits no code.
 */
import type * as registered from './index.js';
import type { WorkflowContracts } from './contracts/index.js';
import type { WorkflowOf } from './contracts/contract.js';

type Registered = typeof registered;

/**
 * the contract types with no matching workflow (never when all match): the workflow must accept the
 * contract's input (a new required field is caught) and return no more than its result says
 */
type Mismatched = {
  [K in keyof WorkflowContracts]: WorkflowContracts[K]['type'] extends keyof Registered
    ? Registered[WorkflowContracts[K]['type']] extends WorkflowOf<WorkflowContracts[K]>
      ? never
      : K
    : K;
}[keyof WorkflowContracts];

type Expect<T extends true> = T;
export type ContractsMatchWorkflows = Expect<[Mismatched] extends [never] ? true : Mismatched>;
