/**
 * Finds the Temporal CLI (the dev server) as DESIGN.md section 2 orders it: TEMPORAL_CLI_PATH,
 * `temporal` on PATH, the per-user cache outside the repository (so fresh clones and CI reuse
 * it), else builds it there with `go install` (minutes on the first run; output is shown), else
 * the SDK's own cached download (machines with internet and no Go).
 */
import fs from 'node:fs';
import path from 'node:path';
import { cacheBinDir, goInstall } from './goInstall.js';
import { onPath, works } from './system.js';

export { cacheBinDir } from './goInstall.js';

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export async function findOrInstallTemporalCli(log: (line: string) => void = console.log): Promise<string> {
  const explicit = process.env.TEMPORAL_CLI_PATH;
  if (explicit) {
    if (!works(explicit)) throw new Error(`TEMPORAL_CLI_PATH=${explicit} is not a working temporal binary`);
    return explicit;
  }
  const fromPath = onPath('temporal');
  if (fromPath && works(fromPath)) return fromPath;
  const cached = path.join(cacheBinDir(), 'temporal');
  if (fs.existsSync(cached) && works(cached)) return cached;

  if (onPath('go')) {
    try {
      const built = await goInstall({ what: 'the Temporal CLI', module: TEMPORAL_CLI_MODULE, binary: 'temporal' }, log);
      if (works(built)) return built;
    } catch (err) {
      log(`${(err as Error).message}\ntrying the SDK's download next`);
    }
  }
  // Last resort: the SDK's own cached download (needs internet); the caller starts it through
  // @temporalio/testing instead of a binary path.
  return SDK_DOWNLOAD;
}

/** Sentinel: no binary here; use TestWorkflowEnvironment's cached download of the dev server. */
export const SDK_DOWNLOAD = 'sdk-cached-download';
