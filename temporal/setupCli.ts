/**
 * `npm run temporal:setup` (production: `node dist/temporal/setupCli.js`): makes TEMPORAL_NAMESPACE on
 * the cluster at TEMPORAL_ADDRESS ready for this service (temporal/setup.ts): the namespace with
 * TEMPORAL_NAMESPACE_RETENTION_DAYS, and every custom search attribute the workflows use. Idempotent:
 * run it on every deploy. TEMPORAL_TLS / TEMPORAL_API_KEY connect to TLS clusters and Temporal Cloud.
 */
import { Connection } from '@temporalio/client';
import { ConfigError, loadConfig } from '../config/index.js';
import { connectionOptions } from './connection.js';
import { setupNamespace, SetupError } from './setup.js';

try {
  const config = loadConfig();
  const opts = connectionOptions(config);
  console.log(`temporal:setup: ${opts.address}${opts.tls ? ' (TLS)' : ''}, namespace ${config.TEMPORAL_NAMESPACE}`);
  const connection = await Connection.connect({ ...opts, connectTimeout: '20s' });
  try {
    await setupNamespace({ connection, namespace: config.TEMPORAL_NAMESPACE, retentionDays: config.TEMPORAL_NAMESPACE_RETENTION_DAYS, log: (line) => console.log(`temporal:setup: ${line}`) });
    console.log('temporal:setup: done');
  } finally {
    await connection.close();
  }
} catch (err) {
  console.error(`temporal:setup failed: ${err instanceof ConfigError || err instanceof SetupError ? err.message : String((err as Error).message ?? err)}`);
  process.exit(1);
}
