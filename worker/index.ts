/** Worker entrypoint: `node dist/worker/index.js` in production, started by `npm run dev` in dev. */
import { loadConfig, ConfigError } from '../config/index.js';
import { createSql } from '../db/client.js';
import { createActivities, type LedgerActivityDeps } from '../activities/index.js';
import { DeploymentError, loadLedgerDeployment } from '../ledger/deployment.js';
import { ledgerClients } from '../ledger/context.js';
import { IdempotentSubmitter } from '../ledger/submit.js';
import { connectWorker, createWorker } from './createWorker.js';
import { startChainIndexersOnce } from '../activities/evm/indexerControl.js';

async function main() {
  const config = loadConfig(process.env, { role: 'worker' });
  if (!config.DATABASE_URL) throw new ConfigError(['DATABASE_URL: missing (the worker needs PostgreSQL)']);
  const sql = createSql(config.DATABASE_URL);
  let ledger: LedgerActivityDeps | undefined;
  try {
    const deployment = loadLedgerDeployment(config);
    const { client, mirror } = ledgerClients(deployment);
    ledger = { deployment, client, mirror, submitter: new IdempotentSubmitter({ sql, client, mirror }) };
  } catch (err) {
    if (!(err instanceof DeploymentError) || config.NODE_ENV === 'production') throw err;
    console.warn(`worker: no ledger activities (${err.message})`);
  }
  const connection = await connectWorker(config);
  const worker = await createWorker({ config, connection, activities: createActivities({ config, sql, ledger }) });
  const stop = () => worker.shutdown();
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  startChainIndexersOnce(config); // chainIndexer workflows per configured EVM contract (no-op without EVM config)
  console.log(`worker polling task queue ${config.TEMPORAL_TASK_QUEUE} on ${config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'}`);
  await worker.run();
  await connection.close();
  ledger?.client.close();
  await sql.end();
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
