/**
 * The real worker entrypoint (worker/index.ts) as a child process, so tests and the chaos script can
 * SIGKILL it as an operator's crash would (an in-process worker can only be shut down gracefully,
 * which hides the recovery time: NOTES.md, second round of measurements).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Sql } from 'postgres';

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
export async function startChildWorker(env: Record<string, string>, readyTimeoutMs = 120_000): Promise<ChildWorker> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, 'worker', 'index.ts')], {
    cwd: root,
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '', NODE_ENV: 'test', LOG_LEVEL: 'warn', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`worker not polling after ${readyTimeoutMs} ms:\n${out}`)), readyTimeoutMs);
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes('worker polling task queue')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`worker exited (${code}) before polling:\n${out}`));
    });
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
