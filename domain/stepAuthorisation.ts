/**
 * Step authorisations (issue 26 item 1; DESIGN 12 "Money integrity II"): a money-moving Update of a
 * workflow (a task's complete, cancel, increaseReward) and a task's start act only on a one-time row
 * the API wrote after it checked the caller's DID signature (db/queries/stepAuthorisations.ts). The
 * workflow consumes it through an activity before it moves anything, so neither a ciphertext copied
 * between histories nor a leaked payload codec key alone moves money: writing the row takes the API's
 * own checks (or the database).
 *
 * The row names the workflow, the message, the caller and the sha256 of the argument's canonical JSON
 * (RFC 8785) without its binding: what the API authorised is exactly what the workflow acts on.
 */
import { canonicalHash } from './trust/canonical.js';

/** The messages that need an authorisation row: the steps that move escrowed money, and a task's start. */
export const AUTHORISED_TASK_UPDATES = ['complete', 'cancel', 'increaseReward'] as const;
export type AuthorisedTaskUpdate = (typeof AUTHORISED_TASK_UPDATES)[number];

export function needsStepAuthorisation(message: string): message is AuthorisedTaskUpdate {
  return (AUTHORISED_TASK_UPDATES as readonly string[]).includes(message);
}

/**
 * sha256 hex of the argument as the workflow receives it: JSON (undefined fields dropped, as the
 * payload converter drops them), without its binding, in canonical form.
 */
export function stepArgumentSha256(arg: object): string {
  const { binding: _binding, ...rest } = JSON.parse(JSON.stringify(arg)) as Record<string, unknown>;
  return canonicalHash(rest);
}
