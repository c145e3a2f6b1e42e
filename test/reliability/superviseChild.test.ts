// The dev launcher's supervision: a child killed with SIGKILL is started again; once stopped on
// purpose it stays stopped.
import { afterEach, describe, expect, it } from 'vitest';
import { startChild, superviseChild, type SupervisedChild } from '../../scripts/lib/children.js';

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
