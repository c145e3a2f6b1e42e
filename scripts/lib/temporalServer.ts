/**
 * Starts the Temporal dev server (SQLite file in dataDir, Web UI) for `npm run dev` and the tests.
 */
import fs from 'node:fs';
import path from 'node:path';
import { startChild, waitForReady } from './children.js';
import { isPortOpen } from './ports.js';
import { findOrInstallTemporalCli, SDK_DOWNLOAD } from './temporalCli.js';
// the custom search attributes: declared to the dev server by flags (a cluster: `npm run temporal:setup`)
import { SEARCH_ATTRIBUTES } from '../../temporal/searchAttributes.js';

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
  /** ends the wait for start-up (the launcher's Ctrl-C); the server is stopped then */
  signal?: AbortSignal;
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
  if (await isPortOpen(opts.port)) throw new Error(`port ${opts.port} (Temporal frontend) is already in use`);
  const child = startChild('temporal', cli, args, { output: (line) => log(`temporal: ${line}`) });
  // no wall-clock deadline: a loaded machine gets the time it needs while the server makes progress
  try {
    await waitForReady(child, { what: 'the Temporal dev server', ready: () => isPortOpen(opts.port), signal: opts.signal, log });
  } catch (err) {
    await child.stop();
    throw err;
  }
  return { address, uiUrl: opts.uiPort ? `http://localhost:${opts.uiPort}` : undefined, stop: () => child.stop() };
}
