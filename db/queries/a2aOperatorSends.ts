/**
 * Authorisations of operator-paid A2A messages (db/migrations/0062_a2a_operator_sends.ts): written by
 * the API for the deprecated POST /a2a/send once it checked the sender, claimed by the workflow that
 * submits the message before the worker adds the operator's signature (activities/ledger/a2a.ts).
 */
import type { Sql } from 'postgres';

/** Rows older than this are swept by each insert (the message they authorise was valid for 120 s). */
const KEEP_MS = 86_400_000;
const SWEEP_PER_INSERT = 50;

export interface OperatorSend {
  /** the message's ledger transaction id (its first chunk's), SDK form */
  transactionId: string;
  senderDid: string;
  /** sha256 of the whole envelope */
  messageSha256: Buffer;
}

/** Records the API's authorisation of one operator-paid message. */
export async function insertOperatorSend(sql: Sql, s: OperatorSend, now: Date = new Date()): Promise<void> {
  await sql`
    delete from a2a_operator_sends where transaction_id in (
      select transaction_id from a2a_operator_sends where created_at < ${new Date(now.getTime() - KEEP_MS)} limit ${SWEEP_PER_INSERT})`;
  await sql`
    insert into a2a_operator_sends (transaction_id, sender_did, message_sha256, created_at)
    values (${s.transactionId}, ${s.senderDid}, ${s.messageSha256}, ${now})`;
}

/**
 * Claims the authorisation of exactly this message (transaction id, sender, envelope digest) for one
 * workflow: true when it is this workflow's (newly or already), false when there is none or another
 * workflow holds it.
 */
export async function claimOperatorSend(sql: Sql, s: OperatorSend & { workflowId: string }): Promise<boolean> {
  const rows = await sql`
    update a2a_operator_sends set workflow_id = ${s.workflowId}
    where transaction_id = ${s.transactionId} and sender_did = ${s.senderDid} and message_sha256 = ${s.messageSha256}
      and (workflow_id is null or workflow_id = ${s.workflowId})
    returning 1`;
  return rows.length === 1;
}
