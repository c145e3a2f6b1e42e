/** API entrypoint: `node dist/api/server.js` in production, started by `npm run dev` in dev. */
import { Redis } from 'ioredis';
import { loadConfig, ConfigError } from '../config/index.js';
import { createSql } from '../db/client.js';
import { lazyTemporalClient } from '../temporal/client.js';
import { DeploymentError } from '../ledger/deployment.js';
import { buildApp } from './app.js';
import { apiLedgerContext, type LedgerContext } from './context.js';
import { startProcessTelemetry } from '../telemetry/process.js';

async function main() {
  const config = loadConfig(process.env, { role: 'api' });
  // first: spans and metrics of everything below (issue 30; nothing without METRICS_PORT / an OTLP endpoint)
  const telemetry = await startProcessTelemetry(config, 'api');
  const sql = config.DATABASE_URL ? createSql(config.DATABASE_URL) : undefined;
  const temporal = lazyTemporalClient(config, { interceptors: telemetry.clientInterceptors });
  const redis = config.REDIS_URL ? new Redis(config.REDIS_URL, { lazyConnect: false, maxRetriesPerRequest: 2 }) : undefined;
  let ledger: LedgerContext | undefined;
  try {
    // no key: the worker signs every ledger write (issue 26 item 9)
    ledger = apiLedgerContext(config);
  } catch (err) {
    if (!(err instanceof DeploymentError) || config.NODE_ENV === 'production') throw err;
    console.warn(`api: ledger routes disabled (${err.message})`);
  }
  const app = await buildApp({ config, sql, temporal: temporal.get, redis, ledger });

  // Graceful shutdown: stop accepting, finish in-flight requests, then close the pools.
  let closing = false;
  const shutdown = async (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal }, 'shutting down');
    // Requests still arriving (keep-alive connections) get 503 service_unavailable in the error schema.
    app.markClosing();
    await app.close();
    await temporal.close();
    await sql?.end({ timeout: 5 });
    redis?.disconnect();
    ledger?.client.close();
    await telemetry.shutdown(); // the last spans are flushed
    process.exit(0);
  };
  process.once('SIGINT', () => void shutdown('SIGINT'));
  process.once('SIGTERM', () => void shutdown('SIGTERM'));

  await app.listen({ host: config.HOST, port: config.PORT });
  app.log.info(telemetry.describe());
}

main().catch((err) => {
  console.error(err instanceof ConfigError ? err.message : err);
  process.exit(1);
});
