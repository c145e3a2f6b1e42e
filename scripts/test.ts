/**
 * npm test: makes sure the tools the integration tests need are here (the Temporal CLI is built
 * into the per-user cache on first run), type-checks, then runs every vitest project.
 * Extra arguments go to vitest (e.g. `npm test -- test/unit`).
 */
import { spawn } from 'node:child_process';
import { findOrInstallTemporalCli, SDK_DOWNLOAD } from './lib/temporalCli.js';

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: 'inherit', env });
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 1 : 0)));
  });
}

const log = (line: string) => console.log(`[test] ${line}`);
const env = { ...process.env };
if (!env.TEMPORAL_ADDRESS) {
  const cli = await findOrInstallTemporalCli(log);
  if (cli !== SDK_DOWNLOAD) env.TEMPORAL_CLI_PATH = cli;
  log(`Temporal CLI: ${cli}`);
}

log('type-checking (tsc --noEmit)');
const tsc = await run('npx', ['tsc', '--noEmit', '-p', 'tsconfig.json'], env);
if (tsc !== 0) process.exit(tsc);

const extra = process.argv.slice(2);
process.exit(await run('npx', ['vitest', 'run', ...extra], env));
