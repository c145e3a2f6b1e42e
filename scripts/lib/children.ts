/**
 * Child processes started by the dev launcher and the test setup. Each child runs in its own
 * process group so stopping it also stops what it spawned; stopAll ends exactly what we started.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface ManagedChild {
  name: string;
  process: ChildProcess;
  /** SIGTERM, then SIGKILL after graceMs; resolves when the process has exited. */
  stop(graceMs?: number): Promise<void>;
  exited: Promise<number | null>;
  /** when it last printed something (ms since the epoch): progress, for waitForReady */
  lastOutputAt: number;
  /** its last lines of output (for a failure message) */
  tail(): string[];
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
  const lines: string[] = [];
  const forward = (chunk: Buffer) => {
    managed.lastOutputAt = Date.now();
    for (const line of chunk.toString('utf8').split('\n')) {
      if (!line.trim()) continue;
      lines.push(line);
      if (lines.length > 20) lines.shift();
      opts.output?.(line);
    }
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
    lastOutputAt: Date.now(),
    tail: () => [...lines],
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

/** CPU time (clock ticks) a process has used so far, from /proc (Linux); undefined elsewhere or once it is gone. */
export function cpuTicks(pid: number | undefined): number | undefined {
  if (!pid) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // after "pid (comm) ": state is field 0; utime, stime, cutime, cstime are fields 11-14
    return fields.slice(11, 15).reduce((sum, f) => sum + Number(f), 0);
  } catch {
    return undefined;
  }
}

export class StartupAborted extends Error {
  constructor(what: string) {
    super(`start-up of ${what} interrupted`);
    this.name = 'StartupAborted';
  }
}

export interface WaitForReadyOptions {
  /** what the messages call it: "the API" */
  what: string;
  /** true once the child serves (a health answer, a line of output, a port) */
  ready: () => Promise<boolean> | boolean;
  /** a stop request (Ctrl-C): the wait ends at once with StartupAborted */
  signal?: AbortSignal;
  log?: (line: string) => void;
  /** give up only when the child made no progress (no output, no CPU time) for this long */
  stallMs?: number;
  /** a "still waiting" line this often */
  heartbeatMs?: number;
  pollMs?: number;
}

/**
 * Waits until a child is ready, however long a loaded machine takes, as long as it makes progress:
 * no wall-clock deadline. It fails when the child exits first (with its last lines), when the child
 * has shown no sign of life (no output and no CPU time used) for stallMs, or when `signal` aborts.
 */
export async function waitForReady(child: ManagedChild, o: WaitForReadyOptions): Promise<void> {
  const stallMs = o.stallMs ?? 300_000;
  const heartbeatMs = o.heartbeatMs ?? 30_000;
  const started = Date.now();
  let lastCpu = cpuTicks(child.process.pid);
  let lastProgressAt = Date.now();
  let lastHeartbeat = Date.now();
  let exitCode: number | null | undefined;
  void child.exited.then((code) => (exitCode = code));
  const failure = (why: string) => {
    const tail = child.tail().slice(-10).map((l) => (l.length > 400 ? `${l.slice(0, 400)}...` : l));
    return new Error(`${o.what} ${why}${tail.length ? `; its last lines:\n${tail.map((l) => `    ${l}`).join('\n')}` : ''}`);
  };
  for (;;) {
    if (o.signal?.aborted) throw new StartupAborted(o.what);
    if (exitCode !== undefined || child.process.exitCode !== null || child.process.signalCode !== null) {
      throw failure(`exited (${child.process.signalCode ?? `code ${child.process.exitCode ?? exitCode}`}) before it was ready`);
    }
    if (await Promise.resolve(o.ready()).catch(() => false)) return;
    const now = Date.now();
    const cpu = cpuTicks(child.process.pid);
    if (child.lastOutputAt > lastProgressAt || (cpu !== undefined && lastCpu !== undefined && cpu > lastCpu)) lastProgressAt = Math.max(now, child.lastOutputAt);
    lastCpu = cpu ?? lastCpu;
    if (now - lastProgressAt > stallMs) throw failure(`is not ready and made no progress (no output, no CPU time) for ${Math.round(stallMs / 1000)} s`);
    if (now - lastHeartbeat >= heartbeatMs) {
      lastHeartbeat = now;
      o.log?.(`still waiting for ${o.what} (${Math.round((now - started) / 1000)} s; last sign of life ${Math.round((now - lastProgressAt) / 1000)} s ago)`);
    }
    await new Promise<void>((resolve) => {
      const wake = () => {
        clearTimeout(t);
        o.signal?.removeEventListener('abort', wake);
        resolve();
      };
      const t = setTimeout(wake, o.pollMs ?? 250);
      o.signal?.addEventListener('abort', wake, { once: true });
    });
  }
}
