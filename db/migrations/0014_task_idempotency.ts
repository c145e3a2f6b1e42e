import type { Sql } from 'postgres';

/**
 * Idempotency keys of POST /market/tasks and /market/tasks/signed (the Idempotency-Key request header,
 * IETF draft "The Idempotency-Key HTTP Header Field"; issue 13): one row per (poster DID, key), written
 * before the task's workflow starts, naming the task the key stands for. request_sha256 is the sha256
 * of the route and the canonical JSON body without any private key (a key is never stored here); a
 * reuse with another body is refused (409 idempotency_key_reused). Rows older than 24 h no longer
 * count: a conflict with one deletes it, and the posting route sweeps them.
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table task_idempotency_keys (
      poster_did       text not null,
      idempotency_key  text not null check (idempotency_key ~ '^[A-Za-z0-9._:-]{1,64}$'),
      request_sha256   text not null check (request_sha256 ~ '^[0-9a-f]{64}$'),
      task_id          uuid not null,
      created_at       timestamptz not null default now(),
      primary key (poster_did, idempotency_key)
    );
    create index task_idempotency_keys_created on task_idempotency_keys (created_at);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists task_idempotency_keys;`);
}
