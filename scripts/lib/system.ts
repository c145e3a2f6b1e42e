/** Small probes of the machine the launchers and the test runners share: a command on PATH, a working binary, apt-get. */
import { spawn, spawnSync } from 'node:child_process';

export function onPath(cmd: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  const p = found.stdout.trim();
  return found.status === 0 && p ? p : undefined;
}

/** The binary answers `args` (by default --version) with exit code 0. */
export function works(bin: string, args: string[] = ['--version']): boolean {
  return spawnSync(bin, args, { encoding: 'utf8', timeout: 30_000 }).status === 0;
}

/** apt-get can install packages here: running as root on a machine that has it. */
export function canAptInstall(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0 && onPath('apt-get') !== undefined;
}

function run(cmd: string, args: string[], log: (line: string) => void): Promise<number | null> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: ['ignore', 'pipe', 'pipe'] });
    const show = (chunk: Buffer) => {
      for (const line of chunk.toString().split('\n')) if (line.trim()) log(`  ${line.trim()}`);
    };
    child.stdout.on('data', show);
    child.stderr.on('data', show);
    child.on('error', () => resolve(null));
    child.on('exit', resolve);
  });
}

/** `apt-get install -y <pkg>` with its output shown; once more after `apt-get update` when it fails. */
export async function aptInstall(pkg: string, log: (line: string) => void): Promise<void> {
  if ((await run('apt-get', ['install', '-y', '--no-install-recommends', pkg], log)) !== 0) {
    log('apt-get install failed; refreshing the package lists and trying again');
    await run('apt-get', ['update'], log);
    await run('apt-get', ['install', '-y', '--no-install-recommends', pkg], log);
  }
}
