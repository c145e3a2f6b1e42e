import type { Sql } from 'postgres';

/**
 * The audit topic's projection (issue 8: GET /audit reads PostgreSQL, paginated, instead of
 * re-reading the topic). The topic stays the record: rows are written by the publishing activity
 * right after consensus (so a read that follows sees its event) and by a catch-up reader that
 * follows the topic through the mirror from audit_cursors (fills consensus timestamps, projects
 * messages published by anything else, and rebuilds the table from the topic when it is emptied).
 * One row per topic message: (topic_id, sequence_number) is unique.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table audit_events (
      topic_id             text not null,
      sequence_number      bigint not null check (sequence_number > 0),
      consensus_timestamp  text,
      type                 text not null,
      token_id             text,
      serial               bigint,
      event                jsonb not null,
      created_at           timestamptz not null default now(),
      primary key (topic_id, sequence_number)
    );
    create index audit_events_passport on audit_events (token_id, serial, sequence_number);

    create table audit_cursors (
      topic_id        text primary key,
      after_sequence  bigint not null default 0,
      updated_at      timestamptz not null default now()
    );
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists audit_cursors; drop table if exists audit_events;`);
}
