/**
 * Finds the Temporal CLI (the dev server) as DESIGN.md section 2 orders it: TEMPORAL_CLI_PATH,
 * `temporal` on PATH, the per-user cache outside the repository (so fresh clones and CI reuse
 * it), else builds it there with `go install` (minutes on the first run; output is shown), else
 * the SDK's own cached download (machines with internet and no Go).
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export const TEMPORAL_CLI_MODULE = 'github.com/temporalio/cli/cmd/temporal@v1.5.1';

export function cacheBinDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'agent-passport', 'bin');
}

function onPath(cmd: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  const p = found.stdout.trim();
  return found.status === 0 && p ? p : undefined;
}

function works(bin: string): boolean {
  return spawnSync(bin, ['--version'], { encoding: 'utf8' }).status === 0;
}

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
    fs.mkdirSync(cacheBinDir(), { recursive: true });
    log(`Building the Temporal CLI with Go into ${cacheBinDir()} (first run only; takes a few minutes)...`);
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn('go', ['install', '-x', TEMPORAL_CLI_MODULE], {
        env: { ...process.env, GOBIN: cacheBinDir(), GOFLAGS: [process.env.GOFLAGS, '-buildvcs=false'].filter(Boolean).join(' ') },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      // `go install -x` prints every build step; show downloads and a heartbeat every 15 s.
      const started = Date.now();
      let steps = 0;
      const heartbeat = setInterval(() => log(`  ...still building (${Math.round((Date.now() - started) / 1000)} s, ${steps} build steps)`), 15_000);
      child.on('exit', () => clearInterval(heartbeat));
      const progress = (chunk: Buffer) => {
        for (const line of chunk.toString().split('\n')) {
          if (line.startsWith('go: downloading')) log(`  ${line}`);
          else if (line.trim()) steps++;
        }
      };
      child.stdout.on('data', progress);
      child.stderr.on('data', progress);
      child.on('exit', resolve);
    });
    if (code === 0 && works(cached)) {
      log(`Temporal CLI ready at ${cached}`);
      return cached;
    }
    log(`go install failed (exit ${code}); trying the SDK's download next`);
  }
  // Last resort: the SDK's own cached download (needs internet); the caller starts it through
  // @temporalio/testing instead of a binary path.
  return SDK_DOWNLOAD;
}

/** Sentinel: no binary here; use TestWorkflowEnvironment's cached download of the dev server. */
export const SDK_DOWNLOAD = 'sdk-cached-download';
