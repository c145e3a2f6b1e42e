/**
 * State shared by the passport, DID and admin route groups of one app: the bounded wait for
 * workflows, workflow timings, and the optional workflow id scope. (Passports and DID documents
 * are served from the NOTIFY-fed memory cache of api/passportCache.ts, not from here.)
 */
import type { AppContext, LedgerContext } from './context.js';
import type { PassportWorkflowTimings } from '../workflows/passportIds.js';

/** How long a paid request waits for its workflow before answering 202 (SPEC: never a hanging request). */
export const WORKFLOW_WAIT_MS = 20_000;

/**
 * State shared by the passport, DID and admin route groups. Keyed by the ledger context (the one
 * object every route group of an app receives), so a test holding that context can shorten waits.
 */
export interface PassportState {
  /** bounded wait for a workflow before answering 202 */
  workflowWaitMs: number;
  /** retry/timeout knobs handed to the workflows (defaults when unset) */
  timings?: PassportWorkflowTimings;
  /**
   * Prefix of every passport workflow id (default none). Tests that run several localnets against
   * one Temporal namespace set a unique one, since their ledger ids coincide.
   */
  workflowIdScope?: string;
}

/** The workflow id as started: the business id, behind the optional test scope. */
export function scopedWorkflowId(state: PassportState, id: string): string {
  return `${state.workflowIdScope ?? ''}${id}`;
}

const STATES = new WeakMap<object, PassportState>();

export function passportStateFor(ledger: LedgerContext): PassportState {
  let s = STATES.get(ledger);
  if (!s) {
    s = { workflowWaitMs: WORKFLOW_WAIT_MS };
    STATES.set(ledger, s);
  }
  return s;
}

export function passportState(ctx: AppContext): PassportState {
  return passportStateFor(ctx.ledger!);
}
