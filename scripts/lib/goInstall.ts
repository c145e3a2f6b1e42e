/**
 * Builds a Go program from the Go module proxy into the per-user cache (~/.cache/agent-passport/bin,
 * outside the repository, so fresh clones and CI reuse it): `go install <module>@<version>` into a
 * private GOBIN, then renamed to its final name there. Used for the Temporal CLI (the dev server) and,
 * for `npm run dev:cluster`, the Temporal server, its SQL tool and the Web UI server. The first build
 * takes minutes: downloads are printed, and a heartbeat every 15 s counts the build steps.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { onPath, works } from './system.js';

export function cacheBinDir(): string {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache');
  return path.join(base, 'agent-passport', 'bin');
}

export interface GoProgram {
  /** what the log calls it, e.g. "the Temporal server" */
  what: string;
  /** package path and version, e.g. go.temporal.io/server/cmd/server@v1.29.1 */
  module: string;
  /** file name in the cache directory, e.g. temporal-server */
  binary: string;
}

/**
 * `go install` of one program into the cache; resolves to its path, or throws with the reason
 * (no Go on PATH, a failed build). The build runs at a lower CPU priority (nice 10) where `nice` exists,
 * so a first build on a small machine leaves the rest of it usable.
 */
export async function goInstall(program: GoProgram, log: (line: string) => void): Promise<string> {
  if (!onPath('go')) throw new Error(`${program.what} is not in ${cacheBinDir()} and Go is not on PATH to build it (Go >= 1.25: https://go.dev/dl/)`);
  const target = path.join(cacheBinDir(), program.binary);
  // a private GOBIN: `go install` names the file after the package (server, sql), which would collide
  const gobin = path.join(cacheBinDir(), `.build-${program.binary}`);
  fs.rmSync(gobin, { recursive: true, force: true });
  fs.mkdirSync(gobin, { recursive: true });
  log(`Building ${program.what} with Go into ${cacheBinDir()} (first run only; takes minutes on a small machine): go install ${program.module}`);
  const args = ['install', '-x', program.module];
  const [cmd, argv] = onPath('nice') ? ['nice', ['-n', '10', 'go', ...args]] : ['go', args];
  const started = Date.now();
  let steps = 0;
  const tail: string[] = [];
  const code = await new Promise<number | null>((resolve) => {
    const child = spawn(cmd, argv, {
      env: { ...process.env, GOBIN: gobin, GOFLAGS: [process.env.GOFLAGS, '-buildvcs=false'].filter(Boolean).join(' ') },
      stdio: ['ignore', 'pipe', 'pipe'],
      cwd: os.tmpdir(), // outside any go.mod: module@version mode
    });
    // `go install -x` prints every build step; show downloads and a heartbeat every 15 s.
    const heartbeat = setInterval(() => log(`  ...still building ${program.binary} (${Math.round((Date.now() - started) / 1000)} s, ${steps} build steps)`), 15_000);
    const progress = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) {
        if (line.startsWith('go: downloading')) log(`  ${line}`);
        else if (line.trim()) {
          steps++;
          tail.push(line);
          if (tail.length > 20) tail.shift();
        }
      }
    };
    child.stdout.on('data', progress);
    child.stderr.on('data', progress);
    child.on('error', () => resolve(null));
    child.on('exit', (c) => {
      clearInterval(heartbeat);
      resolve(c);
    });
  });
  const built = fs.existsSync(gobin) ? fs.readdirSync(gobin).filter((f) => !f.startsWith('.')) : [];
  if (code !== 0 || built.length !== 1) {
    fs.rmSync(gobin, { recursive: true, force: true });
    throw new Error(`go install ${program.module} failed (exit ${code}):\n${tail.filter((l) => !l.startsWith('mkdir') && !l.startsWith('cd ')).slice(-8).join('\n')}`);
  }
  fs.renameSync(path.join(gobin, built[0]!), target);
  fs.rmSync(gobin, { recursive: true, force: true });
  log(`${program.what} ready at ${target} (${Math.round((Date.now() - started) / 1000)} s)`);
  return target;
}

/** The cached binary when it works, else a fresh build (the binary's --version must answer). */
export async function findOrBuild(program: GoProgram, log: (line: string) => void, probe: string[] = ['--version']): Promise<string> {
  const cached = path.join(cacheBinDir(), program.binary);
  if (fs.existsSync(cached) && works(cached, probe)) return cached;
  const built = await goInstall(program, log);
  if (!works(built, probe)) throw new Error(`${built} was built but does not run (${probe.join(' ')})`);
  return built;
}
