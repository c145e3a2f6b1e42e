/**
 * Services of the `cluster` vitest project (`npm run test:cluster`, never `npm test`): a fresh migrated
 * PostgreSQL database, and the Temporal server itself (scripts/lib/temporalCluster.ts, built into
 * ~/.cache/agent-passport/bin on first use) on two fresh PostgreSQL databases (persistence and SQL
 * visibility, schemas by temporal-sql-tool) and free ports, its namespace and search attributes set up
 * by temporal:setup's code. The server runs under a supervisor, as a process manager would run it: a
 * test may kill -9 it (its pid is in the file inject('temporalPidFile') names) and it comes back on the
 * same databases. Everything is removed afterwards (SECRETS_SCAN as in the integration project; the
 * scan reads the histories of every namespace the test files made on the server, not only `default`).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Connection } from '@temporalio/client';
import type { TestProject } from 'vitest/node';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import { resolvePostgres } from '../../scripts/lib/postgres.js';
import { startChild, superviseChild, waitForReady } from '../../scripts/lib/children.js';
import { clusterServing, freeClusterPorts, prepareTemporalCluster, serverCommand, TEMPORAL_SERVER_VERSION } from '../../scripts/lib/temporalCluster.js';
import { setupNamespace } from '../../temporal/setup.js';
import { runSecretsScan, secretsRunDir } from '../reliability/secretsTeardown.js';
import { SECRETS_DIR_ENV } from '../support/consoleLog.js';
import { userNamespaces } from './namespaces.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalPidFile: string;
    temporalLogFile: string;
  }
}

export default async function setup(project: TestProject) {
  const log = (line: string) => process.stderr.write(`[cluster setup] ${line}\n`);
  const stamp = `${Date.now() % 1e8}_${process.pid}`;
  const pg = await resolvePostgres({ databaseUrl: process.env.TEST_DATABASE_URL, dataDir: '.data/postgres-test', database: `agent_passport_cluster_${stamp}`, log });
  const url = process.env.TEST_DATABASE_URL ?? pg.url;
  await ensureDatabase(url);
  await migrate(url);

  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'temporal-cluster-'));
  const databases = { main: `temporal_test_${stamp}`, visibility: `temporal_vis_test_${stamp}` };
  const cluster = await prepareTemporalCluster({ dir, databaseUrl: url, databases, ports: await freeClusterPorts(), log });
  const pidFile = path.join(dir, 'server.pid');
  const logFile = path.join(dir, 'server.log');
  const out = fs.createWriteStream(logFile, { flags: 'a' });
  const [bin, args] = serverCommand(cluster);
  const server = superviseChild(() => {
    const child = startChild('temporal-server', bin, args, { output: (line) => out.write(`${line}\n`) });
    fs.writeFileSync(pidFile, String(child.process.pid));
    return child;
  }, log);
  try {
    await waitForReady(server.current, { what: 'the Temporal server', ready: () => clusterServing(cluster.address), log, pollMs: 500 });
    const connection = await Connection.connect({ address: cluster.address });
    await setupNamespace({ connection, namespace: 'default', retentionDays: 1, log });
    await connection.close();
  } catch (err) {
    await server.stop();
    throw err;
  }
  log(`Temporal server v${TEMPORAL_SERVER_VERSION} at ${cluster.address} on PostgreSQL ${databases.main} / ${databases.visibility}`);

  project.provide('databaseUrl', url);
  project.provide('temporalAddress', cluster.address);
  project.provide('temporalPidFile', pidFile);
  project.provide('temporalLogFile', logFile);
  const secretsDir = secretsRunDir();
  project.provide('secretsDir', secretsDir);
  process.env[SECRETS_DIR_ENV] = secretsDir;

  return async () => {
    let scan: Awaited<ReturnType<typeof runSecretsScan>> | undefined;
    try {
      // each test file works in a namespace of its own: the scan reads all of them
      const connection = await Connection.connect({ address: cluster.address });
      const namespaces = await userNamespaces(connection).finally(() => connection.close());
      scan = await runSecretsScan({ dir: secretsDir, databaseUrl: url, temporalAddress: cluster.address, namespaces, log });
    } finally {
      // stopped and removed even when the scan could not run
      await server.stop();
      out.end();
      for (const db of [databases.main, databases.visibility]) {
        const u = new URL(url);
        u.pathname = `/${db}`;
        await dropDatabase(u.toString()).catch(() => {});
      }
      if (!process.env.TEST_DATABASE_URL && !process.env.KEEP_TEST_DATABASE) await dropDatabase(url).catch(() => {});
      await pg.stop();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    if (scan.found.length) {
      process.exitCode = 1;
      throw new Error(`secrets found after the run: ${scan.found.join('; ')}`);
    }
  };
}
