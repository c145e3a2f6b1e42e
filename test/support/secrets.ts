/**
 * Secrets the tests use, and what they leave behind, for the secrets scan (issue 13, item 5;
 * test/reliability/secretsScan.ts runs it when the integration run ends, from global-setup's teardown).
 *
 * - recordSecret(label, value): a test helper notes a private key or token it used;
 * - appLogStream(): where test API instances write their logs (info level), one file per process;
 *   runLogFile(name): a file in the same directory, for other output (child processes, the Temporal
 *   Runtime of in-process workers);
 * - keepLocalnetData(dataDir, label): a localnet's journal and facilitator files, kept for the scan
 *   (the stack calls it just before it removes its directory);
 * - dumpDatabase(url): the text of every row of every table of a database, kept for the scan
 *   (the e2e harness calls it just before it drops its own database).
 * Everything goes under the run's directory (inject('secretsDir')); without it (unit tests) nothing is kept.
 */
import fs from 'node:fs';
import path from 'node:path';
import { inject } from 'vitest';
import { dumpRows, keepLedgerFiles } from '../reliability/secretsScan.js';

declare module 'vitest' {
  export interface ProvidedContext {
    secretsDir: string;
  }
}

function runDir(): string | null {
  try {
    return inject('secretsDir') ?? null;
  } catch {
    return null;
  }
}

export function recordSecret(label: string, value: string): void {
  const dir = runDir();
  if (!dir || !value) return;
  fs.appendFileSync(path.join(dir, `secrets-${process.pid}.jsonl`), JSON.stringify({ label, value }) + '\n');
}

/** The path of a log file the scan reads (`<run>/logs/<name>`), or null when the run keeps no artefacts. */
export function runLogFile(name: string, dir: string | null = runDir()): string | null {
  if (!dir) return null;
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
  return path.join(dir, 'logs', name);
}

/** A log file stream for a test API instance, or null when the run keeps no artefacts. */
export function appLogStream(): fs.WriteStream | null {
  const file = runLogFile(`api-${process.pid}.log`);
  return file ? fs.createWriteStream(file, { flags: 'a' }) : null;
}

/**
 * Keeps a localnet's journal and facilitator files (not its key stores) for the scan, under
 * `<run>/localnet/<label>` (label: unique, e.g. the stack's temp directory name), before the
 * stack removes its directory (no-op outside an integration run).
 */
export function keepLocalnetData(dataDir: string, label: string, dir: string | null = runDir()): void {
  if (!dir) return;
  keepLedgerFiles(dataDir, path.join(dir, 'localnet', label));
}

/** Keeps a database's rows for the scan before it is dropped (no-op outside an integration run). */
export async function dumpDatabase(databaseUrl: string): Promise<void> {
  const dir = runDir();
  if (!dir) return;
  fs.mkdirSync(path.join(dir, 'dumps'), { recursive: true });
  const name = decodeURIComponent(new URL(databaseUrl).pathname.slice(1));
  await dumpRows(databaseUrl, path.join(dir, 'dumps', `${name}.txt`));
}
