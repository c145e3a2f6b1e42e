/**
 * Message binding (issue 26 item 1; DESIGN 12 "Money integrity II"): every workflow input and Update
 * argument the service writes carries the workflow it was written for, the message it is (the
 * workflow type for a start, the Update's name otherwise) and a random nonce. The binding travels
 * INSIDE the argument, so the payload codec encrypts it with the rest: a ciphertext copied from one
 * history into another workflow, another Update or another start decodes, and is then refused by the
 * workflow (workflows/binding.ts), because what it says about itself does not match where it arrived.
 *
 * Written by temporal/workflows.ts (startWorkflow, executeBoundUpdate) and, for child workflows, by
 * the parent workflow itself; checked by each workflow at its start and by each Update's validator.
 * Workflows started by a Temporal Schedule (the reconcilers) take no binding: the Schedule appends a
 * time to their ids, and their inputs carry no authority (they read what to do from PostgreSQL).
 */
export interface MessageBinding {
  /** the workflow id the message was written for (with any test scope in front) */
  workflowId: string;
  /** the workflow type for a start, the Update's name for an Update */
  message: string;
  /** random per message: a workflow refuses an Update nonce it has seen */
  nonce: string;
}

/** An input or argument that carries its binding (optional in the type: histories recorded before it have none). */
export interface Bound {
  binding?: MessageBinding;
}
