/** Worker entrypoint: `node dist/worker/index.js` in production, started by `npm run dev` in dev. */
import { loadConfig, ConfigError } from '../config/index.js';
import { createSql } from '../db/client.js';
import { createActivities } from '../activities/index.js';
import { DeploymentError, loadLedgerDeployment } from '../ledger/deployment.js';
import { createLedgerServices, escrowKeyCheck, type LedgerServices } from '../ledger/services.js';
import { connectWorker, createWorker } from './createWorker.js';
import { startChainIndexersOnce } from '../activities/evm/indexerControl.js';
import { startPaymentReconcilerOnce } from './paymentReconciler.js';
import { startEscrowReconcilerOnce } from './escrowReconciler.js';
import { startDirectoryProbeOnce } from './directoryProbe.js';
import { countDirectoryProbe } from '../telemetry/metrics.js';
import { searchAttributeProblems, searchAttributeRefusal } from '../temporal/searchAttributes.js';
import { startProcessTelemetry } from '../telemetry/process.js';
import { installTemporalRuntime } from './telemetry.js';
import { startBusinessMetrics } from './businessMetrics.js';

/** the longest a SIGTERMed worker takes to exit (its shutdownForceTime is 10 s) */
const SHUTDOWN_EXIT_MS = 15_000;

async function main() {
  const config = loadConfig(process.env, { role: 'worker' });
  if (!config.DATABASE_URL) throw new ConfigError(['DATABASE_URL: missing (the worker needs PostgreSQL)']);
  // first (issue 30): the SDK runtime with its metrics exporter (before any connection), then spans and
  // the metrics endpoint serving this process's metrics and the SDK's (nothing without METRICS_PORT / OTLP)
  const temporalMetrics = await installTemporalRuntime(config);
  const telemetry = await startProcessTelemetry(config, 'worker', { extraMetrics: temporalMetrics });
  const sql = createSql(config.DATABASE_URL);
  let ledger: LedgerServices | undefined;
  try {
    ledger = createLedgerServices(loadLedgerDeployment(config), { sql });
    // the escrow key signs payouts and refunds (issue 19): a key that is not the account's stops the worker here
    await escrowKeyCheck(ledger, (line) => console.warn(`worker: ${line}`)).catch((err: Error) => {
      throw new Error(`worker: ${err.message}`);
    });
  } catch (err) {
    if (!(err instanceof DeploymentError) || config.NODE_ENV === 'production') throw err;
    console.warn(`worker: no ledger activities (${err.message})`);
  }
  const connection = await connectWorker(config);
  // the search attributes the workflows upsert must exist in the namespace (npm run temporal:setup):
  // without them every task's workflow task would fail and retry forever
  const problems = await searchAttributeProblems(connection, config.TEMPORAL_NAMESPACE).catch((err: Error & { code?: number }) => {
    if (err.code === 5 /* NOT_FOUND */) {
      console.error(`worker: refusing to start: namespace "${config.TEMPORAL_NAMESPACE}" does not exist on ${config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'}; run \`npm run temporal:setup\``);
      process.exit(1);
    }
    console.warn(`worker: could not list the search attributes of namespace "${config.TEMPORAL_NAMESPACE}" (${err.message}); starting without that check`);
    return null;
  });
  const refusal = problems && searchAttributeRefusal(problems, config.TEMPORAL_NAMESPACE);
  if (refusal) {
    console.error(refusal);
    await connection.close();
    process.exit(1);
  }
  const worker = await createWorker({ config, connection, activities: createActivities({ config, sql, ledger, onDirectoryProbe: countDirectoryProbe }), tracing: telemetry.tracing });
  // SIGTERM/SIGINT: stop polling, let running activities finish within the worker's shutdownGraceTime
  // (then they are cancelled and Temporal retries them elsewhere), and exit; a second signal or a
  // shutdown that hangs past SHUTDOWN_EXIT_MS exits at once (unfinished work is retried by Temporal).
  const stop = (signal: NodeJS.Signals) => {
    console.log(`worker: ${signal}, shutting down`);
    setTimeout(() => {
      console.error(`worker: shutdown took more than ${SHUTDOWN_EXIT_MS} ms, exiting`);
      process.exit(1);
    }, SHUTDOWN_EXIT_MS).unref();
    process.once(signal, () => process.exit(1));
    if (worker.getState() === 'RUNNING') worker.shutdown();
  };
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  startChainIndexersOnce(config); // chainIndexer workflows per configured EVM contract (no-op without EVM config)
  if (ledger) startPaymentReconcilerOnce(config); // the payment reconciler's schedule (issue 23), idempotent
  if (ledger) startEscrowReconcilerOnce(config); // the escrow reconciler's schedule (issue 26 item 4), idempotent
  if (ledger) startDirectoryProbeOnce(config); // the directory's liveness probe (issue 29 item 6), idempotent
  // escrow drift, payments awaiting reconciliation, refunds, the reconciler's last run (only with METRICS_PORT)
  const business = telemetry.metrics ? startBusinessMetrics({ config, sql, ledger }) : undefined;
  console.log(telemetry.describe());
  console.log(`worker polling task queue ${config.TEMPORAL_TASK_QUEUE} on ${config.TEMPORAL_ADDRESS ?? '127.0.0.1:7233'}`);
  await worker.run();
  await business?.stop();
  await telemetry.shutdown(); // the last spans are flushed
  await connection.close();
  ledger?.client.close();
  await sql.end();
  process.exit(0); // open handles (indexers, timers) must not keep a stopped worker alive
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
