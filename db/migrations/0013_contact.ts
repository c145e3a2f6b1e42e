import type { Sql } from 'postgres';

/**
 * Contact messages (SPEC 4.7 "GET and POST /contact"; DESIGN.md section 10 "Content"): one row per
 * accepted POST /contact, read by the admin through GET /admin/contact-messages. ip_sha256 is the
 * sha256 of the sender's address, only for the per-address cap (the address itself is not kept).
 */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table contact_messages (
      id          uuid primary key,
      name        text not null,
      email       text not null,
      message     text not null,
      ip_sha256   bytea not null check (octet_length(ip_sha256) = 32),
      created_at  timestamptz not null
    );
    create index contact_messages_ip on contact_messages (ip_sha256, created_at);
    create index contact_messages_created on contact_messages (created_at desc, id desc);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists contact_messages;`);
}
