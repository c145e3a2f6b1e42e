// `npm run demo` (scripts/agent-demo.ts) against a real stack, as it runs against `npm run dev`:
// the deployment file and the API URL of this stack; the walk through the CLI ends with the task
// completed, and no agent key shows in its output.
import path from 'node:path';
import { execFile } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPassportStack, type PassportStack } from './passportHarness.js';

const root = path.join(import.meta.dirname, '..', '..');

describe('npm run demo (the CLI walk) against a real stack', () => {
  let ps: PassportStack;
  beforeAll(async () => {
    ps = await startPassportStack('clidemo');
    await ps.startWorker();
  });
  afterAll(async () => {
    await ps?.stop();
  });

  it('buys and upgrades a passport, resolves the DID, registers, messages and completes a task', async () => {
    const run = await new Promise<{ code: number; out: string }>((resolve) =>
      execFile(
        process.execPath,
        ['--import', 'tsx', 'scripts/agent-demo.ts'],
        { cwd: root, timeout: 300_000, env: { PATH: process.env.PATH ?? '', LOCALNET_CONFIG_PATH: ps.stack.env.LOCALNET_CONFIG_PATH, AGENT_PASSPORT_URL: ps.baseUrl } },
        (err, stdout, stderr) => resolve({ code: err ? 1 : 0, out: `${stdout}\n${stderr}` }),
      ),
    );
    expect(run.code, run.out).toBe(0);
    expect(run.out).toContain('$ agent-passport --key-file alice.json task complete');
    expect(run.out).toMatch(/status: completed/);
    expect(run.out).toMatch(/tier: silver/);
    for (const a of ps.agents) expect(run.out).not.toContain(a.privateKey);
  }, 300_000);
});
