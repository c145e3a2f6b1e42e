import type { Sql } from 'postgres';

/**
 * The operator-paid A2A budget (issue 20 item 7; docs/costs.md "Directory, agent cards and A2A"):
 * bytes of messages the service paid to put on the a2a topic through the deprecated POST /a2a/send,
 * one counter per sender DID per UTC day. A send takes its envelope's bytes with one conditional
 * upsert (bytes + n <= the day's budget), so concurrent sends through any number of API instances
 * never take more than the budget. Rows of past days are swept by the API (kept two days).
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table a2a_operator_bytes (
      sender_did  text not null,
      day         date not null,
      bytes       bigint not null check (bytes >= 0),
      primary key (sender_did, day)
    );
    create index a2a_operator_bytes_day on a2a_operator_bytes (day);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists a2a_operator_bytes;`);
}
