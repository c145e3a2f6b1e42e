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

export interface TemporalDevServerOptions {
  port: number;
  uiPort?: number;
  /** SQLite file; omitted means in-memory (tests). */
  dbFile?: string;
  /** Remote codec the Web UI calls to decode payloads (--ui-codec-endpoint). */
  codecEndpoint?: string;
  log?: (line: string) => void;
}

/** The dev launcher's Temporal: fixed ports from the environment, SQLite under .data, the UI decoding through the API's codec. */
export function devLauncherTemporalOptions(env: { apiPort: number; temporalPort?: string; uiPort?: string; dataDir: string }): TemporalDevServerOptions {
  return {
    port: Number(env.temporalPort ?? 7233),
    uiPort: Number(env.uiPort ?? 8233),
    dbFile: path.join(env.dataDir, 'temporal.sqlite'),
    codecEndpoint: `http://localhost:${env.apiPort}/codec`,
  };
}

/**
 * Custom search attributes the workflows upsert (DESIGN.md section 10 "Marketplace"): registered at
 * start so operators filter task lifecycles in the Web UI (an unregistered one fails the workflow task).
 */
export const SEARCH_ATTRIBUTES: Record<string, 'Keyword' | 'Double'> = {
  TaskStatus: 'Keyword',
  EscrowStatus: 'Keyword',
  PosterDid: 'Keyword',
  ClaimerDid: 'Keyword',
  PriceHbar: 'Double',
};

/** Arguments of `temporal server start-dev` (checked against CLI v1.5.1's --help). */
export function temporalDevServerArgs(opts: TemporalDevServerOptions): string[] {
  const args = ['server', 'start-dev', '--ip', '127.0.0.1', '--port', String(opts.port), '--log-level', 'warn', '--namespace', 'default'];
  for (const [name, type] of Object.entries(SEARCH_ATTRIBUTES)) args.push('--search-attribute', `${name}=${type}`);
  if (opts.uiPort) args.push('--ui-port', String(opts.uiPort), '--ui-ip', '127.0.0.1');
  else args.push('--headless');
  if (opts.dbFile) args.push('--db-filename', opts.dbFile);
  if (opts.codecEndpoint && opts.uiPort) args.push('--ui-codec-endpoint', opts.codecEndpoint);
  return args;
}

export async function startTemporalDevServer(opts: TemporalDevServerOptions): Promise<TemporalDevServer> {
  const log = opts.log ?? (() => {});
  const cli = await findOrInstallTemporalCli(log);
  const address = `127.0.0.1:${opts.port}`;
  if (cli === SDK_DOWNLOAD) {
    const { TestWorkflowEnvironment } = await import('@temporalio/testing');
    const env = await TestWorkflowEnvironment.createLocal({
      server: {
        ip: '127.0.0.1', port: opts.port, ui: opts.uiPort !== undefined, uiPort: opts.uiPort, dbFilename: opts.dbFile,
        extraArgs: Object.entries(SEARCH_ATTRIBUTES).flatMap(([name, type]) => ['--search-attribute', `${name}=${type}`]),
      },
    });
    return { address, uiUrl: opts.uiPort ? `http://localhost:${opts.uiPort}` : undefined, stop: () => env.teardown() };
  }
  if (opts.dbFile) fs.mkdirSync(path.dirname(opts.dbFile), { recursive: true });
  const args = temporalDevServerArgs(opts);
  const child = startChild('temporal', cli, args, { output: (line) => log(`temporal: ${line}`) });
  const exitedEarly = child.exited.then((code) => {
    throw new Error(`temporal dev server exited with code ${code}`);
  });
  await Promise.race([waitForPort(opts.port, { timeoutMs: 60_000, what: 'Temporal dev server' }), exitedEarly]);
  exitedEarly.catch(() => {});
  return { address, uiUrl: opts.uiPort ? `http://localhost:${opts.uiPort}` : undefined, stop: () => child.stop() };
}
