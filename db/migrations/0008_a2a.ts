import type { Sql } from 'postgres';

/**
 * A2A messages (SPEC 4.4, DESIGN.md section 6): the projection of the a2a consensus topic that
 * GET /a2a/inbox and GET /a2a/conversation read. One row per complete message (chunks joined);
 * the topic stays the record. Written by the a2aMessage workflow once the mirror shows the message.
 * Order is consensus order of the message's last chunk (last_sequence_number).
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table a2a_messages (
      id                    text primary key,
      network               text not null,
      topic_id              text not null,
      sequence_number       bigint not null,
      last_sequence_number  bigint not null,
      consensus_timestamp   text not null,
      transaction_id        text not null,
      from_did              text not null,
      to_did                text not null,
      content_type          text not null,
      body                  text not null,
      payer_account_id      text not null,
      chunks                integer not null check (chunks >= 1),
      created_at            timestamptz not null default now(),
      constraint a2a_messages_topic_seq unique (topic_id, sequence_number)
    );
    create index a2a_messages_inbox on a2a_messages (to_did, last_sequence_number desc);
    create index a2a_messages_pair on a2a_messages (from_did, to_did, last_sequence_number);
  `);
}
