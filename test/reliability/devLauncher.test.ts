// `npm run dev` (scripts/dev.ts) stopped at each start-up phase, by Ctrl-C / SIGTERM or by a failing
// child, leaves no process and no listening port behind (issue 21: a failed start used to stop the
// other processes and leave the API running on its port). Each run uses its own ports, data directory
// and database; every process it starts carries a marker in its environment, found through /proc.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { dropDatabase } from '../../db/migrate.js';
import { freeLowPort } from '../../scripts/lib/ports.js';
import { runLauncher, type LauncherRun } from '../support/launcherRun.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PHASES = ['postgres', 'temporal', 'localnet', 'evm', 'localnet.json', 'worker', 'api'] as const;

let dataDir: string;
let databaseUrl: string;

beforeAll(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-launcher-'));
  const u = new URL(inject('databaseUrl'));
  u.pathname = `${u.pathname}_launcher`.slice(0, 63);
  databaseUrl = u.toString();
});
afterAll(async () => {
  await dropDatabase(databaseUrl).catch(() => undefined);
  fs.rmSync(dataDir, { recursive: true, force: true });
});

/** `npm run dev` on ports of its own; `at` / `signal` as runLauncher's */
async function launch(o: { at?: (line: string) => boolean; signal?: NodeJS.Signals; env?: Record<string, string> }): Promise<LauncherRun> {
  // below the ephemeral range: the dev server's own metrics port (a port-0 bind) cannot take one meanwhile
  const taken = new Set<number>();
  const p = () => freeLowPort([0], taken);
  const ports = {
    PORT: await p(),
    TEMPORAL_PORT: await p(),
    TEMPORAL_UI_PORT: await p(),
    LOCALNET_GRPC_PORT: await p(),
    LOCALNET_MIRROR_PORT: await p(),
    FACILITATOR_PORT: await p(),
    EVM_PORT: await p(),
  };
  return runLauncher({ script: path.join('scripts', 'dev.ts'), ports, env: { DEV_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, ...o.env }, at: o.at, signal: o.signal });
}

describe('npm run dev stops everything it started, whenever start-up ends', () => {
  for (const [i, phase] of PHASES.entries()) {
    const signal: NodeJS.Signals = i % 2 ? 'SIGTERM' : 'SIGINT';
    it(`${signal} while starting ${phase}: no process, no port left`, { timeout: 300_000 }, async () => {
      const r = await launch({ at: (line) => line === `[launcher] starting ${phase}`, signal });
      const report = r.report;
      expect(r.output, report).toContain(`[launcher] starting ${phase}`);
      expect(r.leftProcesses, report).toEqual([]);
      expect(r.openPorts, report).toEqual([]);
      expect(r.code, report).toBe(0);
    });
  }

  it('Ctrl-C once the stack is up: no process, no port left', { timeout: 300_000 }, async () => {
    const r = await launch({ at: (line) => line === 'Ctrl-C stops everything.', signal: 'SIGINT' });
    const report = r.report;
    expect(r.output, report).toContain('Agent passport stack is up');
    expect(r.leftProcesses, report).toEqual([]);
    expect(r.openPorts, report).toEqual([]);
  });

  it('an API that takes over a minute to start (a loaded machine) is waited for while it shows progress; Ctrl-C then leaves nothing', { timeout: 400_000 }, async () => {
    const r = await launch({
      at: (line) => line === 'Ctrl-C stops everything.',
      signal: 'SIGINT',
      env: { NODE_OPTIONS: `--import ${path.join(root, 'test', 'support', 'slowStart.mjs')}`, SLOW_START_ENTRY: path.join('api', 'server.ts'), SLOW_START_MS: '75000' },
    });
    const report = r.report;
    expect(r.output, report).toContain('slow start: 5 s to go');
    expect(r.output, report).not.toContain('start-up failed');
    expect(r.output, report).toContain('Agent passport stack is up');
    expect(r.leftProcesses, report).toEqual([]);
    expect(r.openPorts, report).toEqual([]);
    expect(r.code, report).toBe(0);
  });

  it('an API that exits during start-up fails the start: exit 1, its reason printed, and nothing left (the API included)', { timeout: 300_000 }, async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of this machine: the API's listen fails, the worker is unaffected
    const r = await launch({ env: { HOST: '192.0.2.1' } });
    const report = r.report;
    expect(r.code, report).toBe(1);
    expect(r.output, report).toMatch(/start-up failed: the API exited \(code 1\) before it was ready/);
    expect(r.output, report).toContain('EADDRNOTAVAIL');
    expect(r.leftProcesses, report).toEqual([]);
    expect(r.openPorts, report).toEqual([]);
  });
});
