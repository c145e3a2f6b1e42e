/**
 * Starts the Temporal dev server (SQLite file in dataDir, Web UI) for `npm run dev` and the tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startChild } from './children.js';
import { waitForPort } from './ports.js';
import { findOrInstallTemporalCli, SDK_DOWNLOAD } from './temporalCli.js';

export interface TemporalDevServer {
  address: string;
  uiUrl?: string;
  stop(): Promise<void>;
}

export async function startTemporalDevServer(opts: {
  port: number;
  uiPort?: number;
  /** SQLite file; omitted means in-memory (tests). */
  dbFile?: string;
  codecEndpoint?: string;
  log?: (line: string) => void;
}): Promise<TemporalDevServer> {
  const log = opts.log ?? (() => {});
  const cli = await findOrInstallTemporalCli(log);
  const address = `127.0.0.1:${opts.port}`;
  if (cli === SDK_DOWNLOAD) {
    const { TestWorkflowEnvironment } = await import('@temporalio/testing');
    const env = await TestWorkflowEnvironment.createLocal({
      server: { ip: '127.0.0.1', port: opts.port, ui: opts.uiPort !== undefined, uiPort: opts.uiPort, dbFilename: opts.dbFile },
    });
    return { address, uiUrl: opts.uiPort ? `http://localhost:${opts.uiPort}` : undefined, stop: () => env.teardown() };
  }
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(opts.port), '--log-level', 'warn', '--namespace', 'default'];
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort), '--ui-ip', '127.0.0.1');
  else args.push('--headless');
  if (opts.dbFile) {
    fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
    args.push('--db-filename', opts.dbFile);
  }
  if (opts.codecEndpoint) args.push('--ui-codec-endpoint', opts.codecEndpoint);
  const child = startChild('temporal', cli, args, { output: (line) => log(`temporal: ${line}`) });
  const exitedEarly = child.exited.then((code) => {
    throw new Error(`temporal dev server exited with code ${code}`);
  });
  await Promise.race([waitForPort(opts.port, { timeoutMs: 60_000, what: 'Temporal dev server' }), exitedEarly]);
  exitedEarly.catch(() => {});
  return { address, uiUrl: opts.uiPort ? `http://localhost:${opts.uiPort}` : undefined, stop: () => child.stop() };
}
