import type { Sql } from 'postgres';

/** Single-use sign-in challenges (DESIGN.md section 6): shared by every API instance. */
export async function up(sql: Sql): Promise<void> {
  await sql.unsafe(`
    create table auth_challenges (
      challenge    text primary key,
      did          text not null,
      expires_at   timestamptz not null,
      used_at      timestamptz,
      created_at   timestamptz not null default now()
    );
    create index auth_challenges_expires_at on auth_challenges (expires_at);
  `);
}

export async function down(sql: Sql): Promise<void> {
  await sql.unsafe(`drop table if exists auth_challenges;`);
}
