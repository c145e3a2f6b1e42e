/**
 * The real worker entrypoint (worker/index.ts) as a child process, so tests and the chaos script can
 * SIGKILL it as an operator's crash would (an in-process worker can only be shut down gracefully,
 * which hides the recovery time: NOTES.md, second round of measurements).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql } from 'postgres';
import { runLogFile } from '../support/secrets.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

export interface ChildWorker {
  child: ChildProcess;
  /** everything the worker printed (stdout and stderr) */
  output(): string;
  /** resolves when the process has exited */
  exited: Promise<number | null>;
  kill(signal: NodeJS.Signals): Promise<number | null>;
}

/** The connection string of a `postgres` client (the harness keeps its database URL to itself). */
export function databaseUrlOf(sql: Sql): string {
  const o = sql.options as unknown as { host: string[]; port: number[]; user: string; pass?: string | null; database: string };
  const auth = o.pass ? `${encodeURIComponent(o.user)}:${encodeURIComponent(o.pass)}` : encodeURIComponent(o.user);
  return `postgres://${auth}@${o.host[0]}:${o.port[0]}/${o.database}`;
}

/** Starts `worker/index.ts` with the given environment; resolves once it polls its task queue. */
export function startChildWorker(env: Record<string, string>, readyTimeoutMs = 120_000): Promise<ChildWorker> {
  return startChildProcess({ entry: path.join(root, 'worker', 'index.ts'), env, readyText: 'worker polling task queue', readyTimeoutMs, name: 'worker' });
}

export interface ChildProcessOptions {
  /** a TypeScript entry file, run with `node --import tsx` */
  entry: string;
  env: Record<string, string>;
  /** ready once the output contains this text */
  readyText?: string;
  /** or once this resolves true (polled every 200 ms) */
  ready?: () => Promise<boolean>;
  readyTimeoutMs?: number;
  /** open an IPC channel (child.send) */
  ipc?: boolean;
  /** its working directory (default: this repository; another tree's copy for an older version) */
  cwd?: string;
  name?: string;
  /**
   * where all its output is also written (appended): by default `<name>-<pid>.log` in the
   * integration run's log directory, which the secrets scan reads (none outside a test run)
   */
  logFile?: string | null;
}

/** Starts a TypeScript entry as a child process (its own minimal environment) and waits until it is ready. */
export async function startChildProcess(o: ChildProcessOptions): Promise<ChildWorker> {
  const name = o.name ?? path.basename(o.entry);
  const readyTimeoutMs = o.readyTimeoutMs ?? 120_000;
  const child = spawn(process.execPath, ['--import', 'tsx', o.entry], {
    cwd: o.cwd ?? root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'test', LOG_LEVEL: 'warn', ...o.env },
    stdio: o.ipc ? ['ignore', 'pipe', 'pipe', 'ipc'] : ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const logFile = o.logFile === undefined ? runLogFile(`${name}-${child.pid}.log`) : o.logFile;
  const fd = logFile ? fs.openSync(logFile, 'a') : null;
  if (fd !== null) child.once('close', () => fs.closeSync(fd)); // after the last output
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    let done = false;
    const finish = (err?: Error) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      if (err) reject(err);
      else resolve();
    };
    const timer = setTimeout(() => finish(new Error(`${name} not ready after ${readyTimeoutMs} ms:\n${out}`)), readyTimeoutMs);
    const onData = (chunk: Buffer) => {
      if (fd !== null) fs.writeSync(fd, chunk);
      out = (out + chunk.toString()).slice(-65_536); // the last 64 KiB: long chaos runs
      if (o.readyText && out.includes(o.readyText)) finish();
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => finish(new Error(`${name} exited (${code}) before it was ready:\n${out}`)));
    if (o.ready) {
      const probe = o.ready;
      void (async () => {
        while (!done) {
          if (await probe().catch(() => false)) return finish();
          await new Promise((r) => setTimeout(r, 200));
        }
      })();
    }
  });
  return {
    child,
    output: () => out,
    exited,
    async kill(signal) {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
