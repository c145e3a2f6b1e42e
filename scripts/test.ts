/**
 * npm test: makes sure the tools the integration tests need are here (the Temporal CLI is built
 * into the per-user cache on first run; Chromium for the page tests; promtool for the alert rule tests), type-checks, then runs every vitest project.
 * Extra arguments go to vitest (e.g. `npm test -- test/unit`).
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { findOrInstallTemporalCli, SDK_DOWNLOAD } from './lib/temporalCli.js';
import { findOrInstallChromium } from './lib/chromium.js';
import { findOrInstallPrometheus } from './lib/prometheus.js';

/** Runs a command with this process's terminal; with `teeFile`, its stdout and stderr are also written there. */
function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env, teeFile?: string): Promise<number> {
  return new Promise((resolve) => {
    const out = teeFile ? fs.createWriteStream(teeFile) : null;
    const child = spawn(cmd, args, { stdio: out ? ['inherit', 'pipe', 'pipe'] : 'inherit', env });
    child.stdout?.on('data', (c: Buffer) => (process.stdout.write(c), out!.write(c)));
    child.stderr?.on('data', (c: Buffer) => (process.stderr.write(c), out!.write(c)));
    // 'close' comes after the piped output has ended, so the file is complete when this resolves
    child.on('close', (code, signal) => {
      const result = code ?? (signal ? 1 : 0);
      if (out) out.end(() => resolve(result));
      else resolve(result);
    });
  });
}

const log = (line: string) => console.log(`[test] ${line}`);
const env = { ...process.env };
if (!env.TEMPORAL_ADDRESS) {
  const cli = await findOrInstallTemporalCli(log);
  if (cli !== SDK_DOWNLOAD) env.TEMPORAL_CLI_PATH = cli;
  log(`Temporal CLI: ${cli}`);
}

// the page tests drive Debian's Chromium with puppeteer-core (installed here when missing)
env.CHROMIUM_PATH = await findOrInstallChromium(log);
log(`Chromium: ${env.CHROMIUM_PATH}`);
// the alert rule tests run promtool (Debian's prometheus package, installed here when missing)
const prometheus = await findOrInstallPrometheus(log);
env.PROMTOOL_PATH = prometheus.promtool;
log(`promtool: ${prometheus.promtool}`);

log('type-checking (tsc --noEmit)');
const tsc = await run('npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], env);
if (tsc !== 0) process.exit(tsc);

// A JSON report next to the usual output, so the run ends with one plain summary line
// ("Tests: N passed, N failed, N skipped") that any CI can read.
const report = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'vitest-')), 'report.json');
// Everything the run prints, also what test processes write to stderr outside console.* (the Temporal
// core's native warnings), goes to a file too: the secrets scan at the end of the run reads it.
env.TEST_OUTPUT_LOG = path.join(path.dirname(report), 'output.log');
if (process.stdout.isTTY && !env.FORCE_COLOR) env.FORCE_COLOR = '1'; // piped, vitest would drop its colours
const extra = process.argv.slice(2);
const code = await run('npx', ['vitest', 'run', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...extra], env, env.TEST_OUTPUT_LOG);
if (fs.existsSync(report)) {
  const r = JSON.parse(fs.readFileSync(report, 'utf8')) as { numPassedTests: number; numFailedTests: number; numPendingTests: number; numTodoTests: number };
  console.log(`\nTests: ${r.numPassedTests} passed, ${r.numFailedTests} failed, ${r.numPendingTests + r.numTodoTests} skipped`);
}
process.exit(code);
