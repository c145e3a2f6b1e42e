/** Worker entrypoint: `node dist/worker/index.js` in production, started by `npm run dev` in dev. */
import { loadConfig, ConfigError } from '../config/index.js';
import { createSql } from '../db/client.js';
import { createActivities } from '../activities/index.js';
import { connectWorker, createWorker } from './createWorker.js';

async function main() {
  const config = loadConfig();
  if (!config.DATABASE_URL) throw new ConfigError(['DATABASE_URL: missing (the worker needs PostgreSQL)']);
  const sql = createSql(config.DATABASE_URL);
  const connection = await connectWorker(config);
  const worker = await createWorker({ config, connection, activities: createActivities({ config, sql }) });
  const stop = () => worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  console.log(`worker polling task queue ${config.TEMPORAL_TASK_QUEUE} on ${config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'}`);
  await worker.run();
  await connection.close();
  await sql.end();
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
