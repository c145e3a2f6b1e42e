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

export interface SupervisedChild {
  /** the process running now (a new one after each restart) */
  readonly current: ManagedChild;
  /** Stops the process and the supervision: no restart after this. */
  stop(graceMs?: number): Promise<void>;
}

/**
 * Keeps a child running the way a process manager does (systemd's Restart=always, a Kubernetes
 * restart policy): when it exits without being asked to (a crash, a SIGKILL), it is started again
 * with the same command and environment, after a delay that doubles (1 s up to 30 s) while runs keep
 * ending within a minute, back to 1 s after a run that lasted longer.
 */
export function superviseChild(start: () => ManagedChild, log: (line: string) => void): SupervisedChild {
  let current = start();
  let stopping = false;
  let delayMs = 1_000;
  let startedAt = Date.now();
  let timer: NodeJS.Timeout | null = null;
  const watch = (child: ManagedChild) => {
    void child.exited.then(() => {
      if (stopping || child !== current) return;
      const how = child.process.signalCode ?? `code ${child.process.exitCode}`;
      if (Date.now() - startedAt > 60_000) delayMs = 1_000;
      log(`${child.name} exited (${how}); restarting in ${delayMs / 1000} s`);
      timer = setTimeout(() => {
        timer = null;
        if (stopping) return;
        startedAt = Date.now();
        current = start();
        watch(current);
      }, delayMs);
      delayMs = Math.min(delayMs * 2, 30_000);
    });
  };
  watch(current);
  return {
    get current() {
      return current;
    },
    async stop(graceMs?: number) {
      stopping = true;
      if (timer) clearTimeout(timer);
      await current.stop(graceMs);
    },
  };
}
