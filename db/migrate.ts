/**
 * Runs db/migrations with ley (a maintained runner with a driver for the `postgres` package). Each
 * migration file exports up(sql). A session advisory lock serialises concurrent runners (several
 * API instances or test workers starting at once) and every pending file runs in one transaction.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import ley from 'ley';
import postgres, { type Sql } from 'postgres';

const MIGRATIONS_DIR = path.join(path.dirname(fileURLToPath(import.meta.url)), 'migrations');
const LOCK_KEY = 7_240_101; // arbitrary, constant: "agent-passport migrations"
// Names are stored without extension: the same migration is .ts under tsx and .js in dist/.
const EXT = path.extname(fileURLToPath(import.meta.url));
const stem = (name: string) => name.replace(/\.[cm]?[jt]s$/, '');

const lockingPostgresDriver = {
  async connect(config: { url: string }) {
    const sql = postgres(config.url, { onnotice: () => {}, max: 1 });
    await sql`select pg_advisory_lock(${LOCK_KEY})`;
    return sql;
  },
  async setup(sql: Sql) {
    await sql`create table if not exists migrations (id serial primary key, name varchar(255) not null, created_at timestamp without time zone not null default now())`;
    const rows = await sql<{ name: string }[]>`select name from migrations order by id asc`;
    return rows.map((r) => ({ name: `${stem(r.name)}${EXT}` }));
  },
  loop(sql: Sql, files: Array<{ name: string; abs: string }>, method: 'up' | 'down') {
    return sql.begin(async (tx) => {
      for (const file of files) {
        const mod = await import(file.abs);
        const fn = mod[method] ?? mod.default?.[method];
        if (typeof fn === 'function') await fn(tx);
        if (method === 'up') await tx`insert into migrations (name, created_at) values (${stem(file.name)}, now())`;
        else await tx`delete from migrations where name = ${stem(file.name)}`;
      }
    });
  },
  async end(sql: Sql) {
    await sql`select pg_advisory_unlock(${LOCK_KEY})`.catch(() => {});
    await sql.end();
  },
};

/** Applies pending migrations; returns the names applied. */
export async function migrate(databaseUrl: string): Promise<string[]> {
  return ley.up({ dir: MIGRATIONS_DIR, cwd: '/', driver: lockingPostgresDriver as never, config: { url: databaseUrl } });
}

/** Creates the database named in the URL when the server does not have it yet. */
export async function ensureDatabase(databaseUrl: string): Promise<void> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name) throw new Error('DATABASE_URL names no database');
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { onnotice: () => {}, max: 1 });
  try {
    const rows = await sql`select 1 from pg_database where datname = ${name}`;
    if (rows.length === 0) {
      await sql.unsafe(`create database "${name.replace(/"/g, '""')}"`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another process
      });
    }
  } finally {
    await sql.end();
  }
}

/** Drops the database named in the URL (throwaway test and bench databases), ending its sessions. */
export async function dropDatabase(databaseUrl: string): Promise<void> {
  const name = decodeURIComponent(new URL(databaseUrl).pathname.replace(/^\//, ''));
  const admin = new URL(databaseUrl);
  admin.pathname = '/postgres';
  const sql = postgres(admin.toString(), { onnotice: () => {}, max: 1 });
  try {
    await sql.unsafe(`drop database if exists "${name.replace(/"/g, '""')}" with (force)`);
  } finally {
    await sql.end();
  }
}
