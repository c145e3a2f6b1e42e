/**
 * Child processes started by the dev launcher and the test setup. Each child runs in its own
 * process group so stopping it also stops what it spawned; stopAll ends exactly what we started.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';

export interface ManagedChild {
  name: string;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL after graceMs; resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
}

const running = new Set<ManagedChild>();

/** Last resort (a third Ctrl-C): SIGKILL every child process group still running. */
export function killAllChildren(): void {
  for (const child of running) {
    try {
      if (child.process.pid) process.kill(-child.process.pid, 'SIGKILL');
    } catch {
      /* already gone */
    }
  }
}

export function startChild(
  name: string,
  command: string,
  args: string[],
  opts: SpawnOptions & { output?: (line: string) => void } = {},
): ManagedChild {
  const child = spawn(command, args, { ...opts, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const forward = (chunk: Buffer) => {
    if (!opts.output) return;
    for (const line of chunk.toString('utf8').split('\n')) if (line.trim()) opts.output(line);
  };
  child.stdout?.on('data', forward);
  child.stderr?.on('data', forward);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(null));
  });
  const signal = (sig: NodeJS.Signals) => {
    try {
      if (child.pid) process.kill(-child.pid, sig); // the whole group
    } catch {
      /* already gone */
    }
  };
  const managed: ManagedChild = {
    name,
    process: child,
    exited,
    async stop(graceMs = 10_000) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      signal('SIGTERM');
      const timer = setTimeout(() => signal('SIGKILL'), graceMs);
      await exited;
      clearTimeout(timer);
    },
  };
  running.add(managed);
  void exited.then(() => running.delete(managed));
  return managed;
}
