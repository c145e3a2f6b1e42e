// The dev launcher's supervision: a child killed with SIGKILL is started again; once stopped on
// purpose it stays stopped.
import { afterEach, describe, expect, it } from 'vitest';
import { startChild, superviseChild, waitForReady, type ManagedChild, type SupervisedChild } from '../../scripts/lib/children.js';

let supervised: SupervisedChild | null = null;
afterEach(async () => {
  await supervised?.stop(1_000);
  supervised = null;
});

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

async function until(what: string, check: () => boolean, timeoutMs = 20_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

describe('superviseChild', () => {
  it('starts a killed child again, and not after stop()', async () => {
    const lines: string[] = [];
    let starts = 0;
    supervised = superviseChild(() => {
      starts++;
      return startChild('sleeper', process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
    }, (l) => lines.push(l));
    const first = supervised.current.process.pid!;
    process.kill(first, 'SIGKILL');
    await until('a second process', () => supervised!.current.process.pid !== first);
    const second = supervised.current.process.pid!;
    expect(alive(second)).toBe(true);
    expect(starts).toBe(2);
    expect(lines).toEqual(['sleeper exited (SIGKILL); restarting in 1 s']);

    await supervised.stop(1_000);
    expect(alive(second)).toBe(false);
    await new Promise((r) => setTimeout(r, 1_500)); // longer than the restart delay
    expect(starts).toBe(2);
  });

  it('waits longer before each restart of a child that keeps dying at once', async () => {
    const lines: string[] = [];
    supervised = superviseChild(() => startChild('crasher', process.execPath, ['-e', 'process.exit(3)']), (l) => lines.push(l));
    await until('two restarts', () => lines.length >= 2, 10_000);
    expect(lines.slice(0, 2)).toEqual(['crasher exited (code 3); restarting in 1 s', 'crasher exited (code 3); restarting in 2 s']);
  });
});

describe('waitForReady (the launchers\' start-up wait)', () => {
  const started: ManagedChild[] = [];
  afterEach(async () => {
    for (const c of started.splice(0)) await c.stop(1_000);
  });

  it('waits past the stall limit while the child keeps making progress', async () => {
    // ready after ~3 s, printing every 200 ms; the stall limit is 1 s: progress, not a deadline, decides
    const child = startChild('slow', process.execPath, ['-e', 'const t0 = Date.now(); setInterval(() => console.log(Date.now() - t0 > 3000 ? "ready" : "working"), 200)']);
    started.push(child);
    await waitForReady(child, { what: 'slow', ready: () => child.tail().includes('ready'), stallMs: 1_000, pollMs: 50 });
    expect(child.tail()).toContain('ready');
  });

  it('fails a child that shows no sign of life (no output, no CPU time) for the stall limit, naming it', async () => {
    const child = startChild('silent', process.execPath, ['-e', 'console.log("hello"); setInterval(() => {}, 1000)']);
    started.push(child);
    await expect(waitForReady(child, { what: 'the silent one', ready: () => false, stallMs: 1_500, pollMs: 50 })).rejects.toThrow(/the silent one is not ready and made no progress .* for 2 s; its last lines:\n    hello/);
  });

  it('fails at once when the child exits first, with its last lines', async () => {
    const child = startChild('crasher', process.execPath, ['-e', 'console.error("bad config"); process.exit(3)']);
    await expect(waitForReady(child, { what: 'the crasher', ready: () => false })).rejects.toThrow(/the crasher exited \(code 3\) before it was ready; its last lines:\n    bad config/);
  });

  it('ends at once when the launcher is asked to stop', async () => {
    const child = startChild('sleeper', process.execPath, ['-e', 'setInterval(() => {}, 1000)']);
    started.push(child);
    const abort = new AbortController();
    const waiting = waitForReady(child, { what: 'sleeper', ready: () => false, signal: abort.signal });
    abort.abort();
    await expect(waiting).rejects.toThrow('start-up of sleeper interrupted');
  });
});
