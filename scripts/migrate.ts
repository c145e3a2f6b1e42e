/** npm run migrate: applies pending migrations to DATABASE_URL (or the dev database the launcher would use). */
import { loadConfig } from '../config/index.js';
import { ensureDatabase, migrate } from '../db/migrate.js';
import { resolvePostgres } from './lib/postgres.js';

const config = loadConfig();
const pg = await resolvePostgres({ databaseUrl: config.DATABASE_URL, dataDir: '.data/postgres', log: console.log });
try {
  await ensureDatabase(pg.url);
  const applied = await migrate(pg.url);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} finally {
  await pg.stop();
}
