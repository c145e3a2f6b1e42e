/** The Temporal client the API uses to start, signal, update and query workflows. */
import { Client, Connection, type ClientInterceptors } from '@temporalio/client';
import type { Config } from '../config/index.js';
import { connectionOptions, dataConverter } from './connection.js';

/** `interceptors`: the tracing interceptor while tracing runs (telemetry/process.ts). */
export async function createTemporalClient(config: Config, o: { interceptors?: ClientInterceptors } = {}): Promise<Client> {
  const connection = await Connection.connect(connectionOptions(config));
  return new Client({ connection, namespace: config.TEMPORAL_NAMESPACE, dataConverter: dataConverter(config), interceptors: o.interceptors });
}

/** Connects on first use and remembers the connection; a failed attempt is retried next call. */
export function lazyTemporalClient(config: Config, o: { interceptors?: ClientInterceptors } = {}): { get: () => Promise<Client>; close: () => Promise<void> } {
  let pending: Promise<Client> | undefined;
  return {
    get() {
      pending ??= createTemporalClient(config, o).catch((err) => {
        pending = undefined;
        throw err;
      });
      return pending;
    },
    async close() {
      if (!pending) return;
      const client = await pending.catch(() => undefined);
      await client?.connection.close();
    },
  };
}
