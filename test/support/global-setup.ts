/**
 * Services for the integration project, started once per `vitest run`: the Temporal dev server
 * (in memory, its own free port) unless TEMPORAL_ADDRESS is set, and a fresh migrated PostgreSQL
 * database (dropped afterwards). Tests read them with inject('temporalAddress') / inject('databaseUrl').
 */
import type { TestProject } from 'vitest/node';
import { freePort } from '../../scripts/lib/ports.js';
import { resolvePostgres } from '../../scripts/lib/postgres.js';
import { startTemporalDevServer } from '../../scripts/lib/temporalServer.js';
import { dropDatabase, ensureDatabase, migrate } from '../../db/migrate.js';
import { runSecretsScan, secretsRunDir } from '../reliability/secretsTeardown.js';
import { SECRETS_DIR_ENV } from './consoleLog.js';

declare module 'vitest' {
  export interface ProvidedContext {
    temporalAddress: string;
    databaseUrl: string;
  }
}

export default async function setup(project: TestProject) {
  const log = (line: string) => process.stderr.write(`[setup] ${line}\n`);
  const database = `agent_passport_test_${Date.now()}_${process.pid}`;
  const pg = await resolvePostgres({
    databaseUrl: process.env.TEST_DATABASE_URL,
    dataDir: '.data/postgres-test',
    database,
    log,
  });
  const url = process.env.TEST_DATABASE_URL ?? pg.url;
  await ensureDatabase(url);
  await migrate(url);

  let temporal: { address: string; stop(): Promise<void> } | undefined;
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) temporal = await startTemporalDevServer({ port: await freePort(), log: (line) => { if (!line.startsWith('temporal:')) log(line); } });

  project.provide('databaseUrl', url);
  project.provide('temporalAddress', address ?? temporal!.address);
  const secretsDir = secretsRunDir();
  project.provide('secretsDir', secretsDir);
  process.env[SECRETS_DIR_ENV] = secretsDir; // for onConsoleLog (test/support/consoleLog.ts), in this process

  return async () => {
    // the secrets scan (issue 13): logs, database rows and (our own dev server's) histories, before they go
    const scan = await runSecretsScan({ dir: secretsDir, databaseUrl: url, temporalAddress: temporal?.address, log });
    await temporal?.stop();
    if (!process.env.TEST_DATABASE_URL && !process.env.KEEP_TEST_DATABASE) await dropDatabase(url).catch(() => {});
    await pg.stop();
    if (scan.found.length) {
      process.exitCode = 1;
      throw new Error(`secrets found after the run: ${scan.found.join('; ')}`);
    }
  };
}
