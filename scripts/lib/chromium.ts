/**
 * Finds the Chromium the page tests drive with puppeteer-core (DESIGN.md section 10 "Content"):
 * CHROMIUM_PATH, else Debian's /usr/bin/chromium (or chromium / chromium-browser on PATH), else
 * installs Debian's package with `apt-get install -y chromium` when running as root on a machine with
 * apt-get (progress shown), else fails with a message saying what to do.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

function onPath(cmd: string): string | undefined {
  const found = spawnSync('sh', ['-c', `command -v ${cmd}`], { encoding: 'utf8' });
  const p = found.stdout.trim();
  return found.status === 0 && p ? p : undefined;
}

function works(bin: string): boolean {
  return spawnSync(bin, ['--version'], { encoding: 'utf8', timeout: 30_000 }).status === 0;
}

/** A working Chromium already on this machine, if any. */
export function findChromium(): string | undefined {
  const explicit = process.env.CHROMIUM_PATH;
  if (explicit) {
    if (!works(explicit)) throw new Error(`CHROMIUM_PATH=${explicit} is not a working Chromium binary`);
    return explicit;
  }
  for (const c of CANDIDATES) if (fs.existsSync(c) && works(c)) return c;
  for (const cmd of ['chromium', 'chromium-browser']) {
    const p = onPath(cmd);
    if (p && works(p)) return p;
  }
  return undefined;
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

export async function findOrInstallChromium(log: (line: string) => void = console.log): Promise<string> {
  const found = findChromium();
  if (found) return found;
  const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;
  if (isRoot && onPath('apt-get')) {
    log('Installing Chromium for the page tests (apt-get install -y chromium; first run only)...');
    if ((await run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], log)) !== 0) {
      log('apt-get install failed; refreshing the package lists and trying again');
      await run('apt-get', ['update'], log);
      await run('apt-get', ['install', '-y', '--no-install-recommends', 'chromium'], log);
    }
    const installed = findChromium();
    if (installed) {
      log(`Chromium ready at ${installed}`);
      return installed;
    }
  }
  throw new Error(
    'Chromium not found for the page tests. Install it (Debian/Ubuntu: `sudo apt-get install chromium`) or set CHROMIUM_PATH to a Chromium or Chrome binary.',
  );
}
