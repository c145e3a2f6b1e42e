/**
 * Runs a launcher (scripts/dev.ts, scripts/devCluster.ts) as a user does, and says what it left behind:
 * every process it starts inherits a marker in its environment, found afterwards through /proc, and
 * every port it was given is probed (test/reliability/devLauncher.test.ts, test/cluster/devCluster.test.ts).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { isPortOpen } from '../../scripts/lib/ports.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const MARKER = 'LAUNCHER_TEST_RUN';

/** pids of live processes whose environment carries this run's marker */
export function processesOf(run: string): number[] {
  const out: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const env = fs.readFileSync(`/proc/${entry}/environ`, 'utf8');
      const state = fs.readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.[0];
      if (env.includes(`${MARKER}=${run}\0`) && state !== 'Z') out.push(Number(entry));
    } catch {
      /* gone, or not ours to read */
    }
  }
  return out;
}

export interface LauncherRun {
  code: number | null;
  signal: NodeJS.Signals | null;
  output: string;
  leftProcesses: number[];
  openPorts: number[];
  /** one line for an assertion message */
  report: string;
}

/**
 * Starts the launcher `script` with `env` (its ports among them: every value of `ports` is probed
 * afterwards); when a line matching `at` is printed, sends `signal` (when given; else `onLine` may act).
 * Resolves after the launcher has exited, with what is still alive from it (then SIGKILLed, so one
 * failure does not leak into the next run).
 */
export async function runLauncher(o: {
  script: string;
  ports: Record<string, number>;
  env: Record<string, string>;
  at?: (line: string) => boolean;
  signal?: NodeJS.Signals;
  /** called once with the line `at` matched, before the signal is sent */
  onAt?: (line: string) => Promise<void>;
}): Promise<LauncherRun> {
  const run = randomUUID();
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(root, o.script)], {
    cwd: root,
    env: {
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      ...(process.env.TEMPORAL_CLI_PATH ? { TEMPORAL_CLI_PATH: process.env.TEMPORAL_CLI_PATH } : {}),
      [MARKER]: run,
      LOG_LEVEL: 'warn',
      ...Object.fromEntries(Object.entries(o.ports).map(([k, v]) => [k, String(v)])),
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  let sent = false;
  const onData = (chunk: Buffer) => {
    const text = chunk.toString();
    output += text;
    const line = !sent && o.at ? text.split('\n').find(o.at) : undefined;
    if (line !== undefined) {
      sent = true;
      void (o.onAt ? o.onAt(line) : Promise.resolve()).finally(() => {
        if (o.signal) child.kill(o.signal);
      });
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => child.on('exit', (c, s) => resolve([c, s])));
  // the launcher exits only after each process it stopped has exited: look at once (an orphan would
  // otherwise get time to die of its closed output pipe, which a real terminal session does not give it)
  const leftProcesses = processesOf(run);
  const openPorts: number[] = [];
  for (const port of Object.values(o.ports)) if (await isPortOpen(port)) openPorts.push(port);
  for (const pid of leftProcesses) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
  const report = `exit ${code ?? signal}; left: ${leftProcesses.join(', ') || 'none'}; open ports: ${openPorts.join(', ') || 'none'}\n${output.slice(-3000)}`;
  return { code, signal, output, leftProcesses, openPorts, report };
}
