import type { Sql } from 'postgres';

/**
 * The API's authorisations of operator-paid A2A messages (issue 26 item 9): the deprecated
 * POST /a2a/send is signed by the worker, which holds the operator key, and the worker signs such a
 * message only when the API wrote its row here after checking the sender's DID signature, both
 * passports and the sender's daily byte budget. A row names the message's ledger transaction id (of
 * its first chunk), its sender and the sha256 of its envelope; the workflow that submits it claims
 * it (workflow_id), so a copied workflow input under another workflow id gets nothing signed. Rows
 * older than a day are swept by each insert (a message is valid for 120 s).
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table a2a_operator_sends (
      transaction_id  text primary key,
      sender_did      text not null,
      message_sha256  bytea not null,
      workflow_id     text,
      created_at      timestamptz not null default now()
    );
    create index a2a_operator_sends_created_at on a2a_operator_sends (created_at);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table a2a_operator_sends;`);
}
