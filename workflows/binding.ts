/**
 * The workflow side of message binding (workflows/contracts/binding.ts; issue 26 item 1): a workflow
 * acts only on an input or Update argument written for it, as that message, once.
 *
 *   requireBoundStart(input, type)   at a workflow's start: the input names this workflow id and type;
 *                                    carried state (continue-as-new) is taken only from a run that
 *                                    continued as new, never from a start a client sent
 *   updateNonces(carried)            an Update argument names this workflow and Update, and a nonce
 *                                    not seen in the last NONCES_KEPT Updates (validator: check;
 *                                    handler: use)
 *
 * Starts recorded before the binding replay without the check (patched BOUND_MESSAGES_PATCH). Update
 * validators do not run on replay, so they check every new Update whenever the workflow started.
 * Deterministic code only.
 */
import { ApplicationFailure, patched, uuid4, workflowInfo } from '@temporalio/workflow';
import type { Bound, MessageBinding } from './contracts/binding.js';

/** patched() id: starts check their binding, money-moving steps use their authorisation row. */
export const BOUND_MESSAGES_PATCH = 'bound-messages';
/** The failure type of a start refused for its binding (final). */
export const UNBOUND_MESSAGE = 'UnboundMessage';
/**
 * Update nonces a run remembers (and carries across continue-as-new). A copy of an older Update can
 * only repeat a step that is not money-moving (claim, deliver, verify, fund: their repeats answer the
 * task); a money-moving step is single-use through its authorisation row whatever this window holds.
 */
export const NONCES_KEPT = 256;

/** The binding a parent writes into a child workflow's input (the nonce from the workflow's deterministic uuid4). */
export function childBinding(workflowId: string, type: string): MessageBinding {
  return { workflowId, message: type, nonce: uuid4() };
}

/** What is wrong with an argument's binding for this workflow and message, or null when it fits. */
export function bindingProblem(arg: unknown, message: string): string | null {
  const b = arg && typeof arg === 'object' ? (arg as Bound).binding : undefined;
  if (!b || typeof b !== 'object') return 'it carries no binding to this workflow';
  if (b.workflowId !== workflowInfo().workflowId) return 'it was written for another workflow';
  if (b.message !== message) return `it was written for another message than ${message}`;
  if (typeof b.nonce !== 'string' || b.nonce.length === 0) return 'it carries no nonce';
  return null;
}

/**
 * Refuses (fails the run, before any step) a start whose input was written for another workflow id or
 * type, or that carries continue-as-new state although no run continued into it.
 */
export function requireBoundStart(input: Bound & { carried?: unknown }, type: string): void {
  if (!patched(BOUND_MESSAGES_PATCH)) return;
  const problem =
    bindingProblem(input, type) ??
    (input.carried !== undefined && !workflowInfo().continuedFromExecutionRunId ? 'carried state comes only from continue-as-new' : null);
  if (problem) throw ApplicationFailure.create({ type: UNBOUND_MESSAGE, message: `The workflow input was refused: ${problem}`, nonRetryable: true });
}

/** The Update nonces a run has seen (the newest NONCES_KEPT), for validators and handlers. */
export function updateNonces(carried: readonly string[] = []) {
  const seen: string[] = carried.slice(-NONCES_KEPT);
  const set = new Set(seen);
  return {
    /** validator: the problem with this Update argument, or null */
    problem(arg: unknown, message: string): string | null {
      const p = bindingProblem(arg, message);
      if (p) return p;
      return set.has((arg as Required<Bound>).binding.nonce) ? 'it was sent before' : null;
    },
    /**
     * handler, first thing: remembers the argument's nonce; a nonce seen before (two copies validated
     * in one activation) is refused here. Arguments without a binding (Updates recorded before it) pass.
     */
    use(arg: unknown): string | null {
      const nonce = arg && typeof arg === 'object' ? (arg as Bound).binding?.nonce : undefined;
      if (nonce === undefined) return null;
      if (set.has(nonce)) return 'it was sent before';
      set.add(nonce);
      seen.push(nonce);
      if (seen.length > NONCES_KEPT) set.delete(seen.shift()!);
      return null;
    },
    carried: (): string[] => [...seen],
  };
}
