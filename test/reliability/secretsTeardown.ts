/**
 * Run by global-setup's teardown when an integration run ends: scans what the run left behind for
 * the secrets its tests recorded (secretsScan.ts) and prints one line; SECRETS_SCAN=0 skips it.
 * The report is kept in the run's directory (secrets-report.json); everything else there is removed.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { dumpRows, readSecrets, scanForSecrets, type ScanReport } from './secretsScan.js';

export function secretsRunDir(): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'agent-passport-secrets-'));
}

export async function runSecretsScan(opts: { dir: string; databaseUrl: string; temporalAddress?: string; namespaces?: string[]; log(line: string): void }): Promise<ScanReport> {
  const empty: ScanReport = { secrets: 0, logFiles: 0, logBytes: 0, databases: 0, rows: 0, workflows: 0, payloads: 0, encryptedPayloads: 0, ledgerFiles: 0, transactions: 0, found: [] };
  if (process.env.SECRETS_SCAN === '0') return empty;
  const secrets = readSecrets(opts.dir);
  if (!secrets.length) {
    fs.rmSync(opts.dir, { recursive: true, force: true });
    return empty; // no test of this run used a recorded secret
  }
  const dumps = path.join(opts.dir, 'dumps');
  fs.mkdirSync(dumps, { recursive: true });
  await dumpRows(opts.databaseUrl, path.join(dumps, 'run-database.txt'));
  keepTestOutput(path.join(opts.dir, 'logs'));
  const report = await scanForSecrets({
    secrets,
    logDir: path.join(opts.dir, 'logs'),
    dumpFiles: fs.readdirSync(dumps).map((f) => path.join(dumps, f)),
    ledgerDir: path.join(opts.dir, 'localnet'),
    temporalAddress: opts.temporalAddress, // only a dev server this run started (never a shared one)
    namespaces: opts.namespaces,
  });
  opts.log(
    `secrets scan: ${report.secrets} secrets in ${report.logFiles} log files (${report.logBytes} bytes), ${report.rows} rows of ${report.databases} databases, ` +
      `${report.payloads} payloads of ${report.workflows} workflow histories${report.namespaces && report.namespaces > 1 ? ` in ${report.namespaces} namespaces` : ''} (${report.encryptedPayloads} encrypted), ` +
      `${report.transactions} transactions in ${report.ledgerFiles} localnet files: ${report.found.length} found` +
      (report.found.length ? `\n  ${report.found.join('\n  ')}` : ''),
  );
  for (const f of fs.readdirSync(opts.dir)) if (f !== 'secrets-report.json') fs.rmSync(path.join(opts.dir, f), { recursive: true, force: true });
  fs.writeFileSync(path.join(opts.dir, 'secrets-report.json'), JSON.stringify(report, null, 2));
  return report;
}

/** ANSI colour and cursor sequences: a secret printed in colour must still match as one string. */
const ANSI = /\x1b\[[0-9;?]*[A-Za-z]/g;

/**
 * The output of the whole run so far (scripts/test.ts tees vitest's stdout and stderr into
 * TEST_OUTPUT_LOG: reporters, and what test processes print outside console.*, such as the
 * Temporal core's native warnings), without colour codes, as one more log file of the scan.
 */
export function keepTestOutput(logDir: string, file = process.env.TEST_OUTPUT_LOG): void {
  if (!file || !fs.existsSync(file)) return;
  fs.mkdirSync(logDir, { recursive: true });
  fs.writeFileSync(path.join(logDir, 'test-output.log'), fs.readFileSync(file, 'utf8').replace(ANSI, ''));
}
