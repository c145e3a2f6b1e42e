/** Production migration entry (`node dist/db/migrateCli.js`): applies pending migrations to DATABASE_URL. */
import { loadConfig, ConfigError } from '../config/index.js';
import { ensureDatabase, migrate } from './migrate.js';

try {
  const { DATABASE_URL } = loadConfig();
  if (!DATABASE_URL) throw new ConfigError(['DATABASE_URL: missing']);
  await ensureDatabase(DATABASE_URL);
  const applied = await migrate(DATABASE_URL);
  console.log(applied.length ? `applied: ${applied.join(', ')}` : 'database is up to date');
} catch (err) {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
}
