/** Queries of step_authorisations (db/migrations/0060; domain/stepAuthorisation.ts). */
import type { Sql } from 'postgres';

export interface NewStepAuthorisation {
  nonce: string;
  workflowId: string;
  message: string;
  callerDid: string;
  argsSha256: string;
}

/** Written by the API once it checked the caller, before it sends the message. */
export async function recordStepAuthorisation(sql: Sql, a: NewStepAuthorisation): Promise<void> {
  await sql`
    insert into step_authorisations (nonce, workflow_id, message, caller_did, args_sha256)
    values (${a.nonce}, ${a.workflowId}, ${a.message}, ${a.callerDid}, ${a.argsSha256})`;
}

export type StepAuthorisationUse = 'used' | 'absent' | 'mismatch' | 'used_elsewhere';

/**
 * Uses the authorisation of a message once: the row must name this workflow, this message, this
 * caller and these argument bytes, and be unused or used by this same step (`usedBy`, a retry).
 */
export async function useStepAuthorisation(sql: Sql, a: NewStepAuthorisation & { usedBy: string }): Promise<StepAuthorisationUse> {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(a.nonce)) return 'absent';
  const used = await sql`
    update step_authorisations set used_by = ${a.usedBy}, used_at = coalesce(used_at, now())
     where nonce = ${a.nonce} and workflow_id = ${a.workflowId} and message = ${a.message}
       and caller_did = ${a.callerDid} and args_sha256 = ${a.argsSha256}
       and (used_by is null or used_by = ${a.usedBy})
    returning 1`;
  if (used.length) return 'used';
  const [row] = await sql<{ workflow_id: string; message: string; caller_did: string; args_sha256: string; used_by: string | null }[]>`
    select workflow_id, message, caller_did, args_sha256, used_by from step_authorisations where nonce = ${a.nonce}`;
  if (!row) return 'absent';
  if (row.workflow_id !== a.workflowId || row.message !== a.message || row.caller_did !== a.callerDid || row.args_sha256 !== a.argsSha256) return 'mismatch';
  return 'used_elsewhere';
}
