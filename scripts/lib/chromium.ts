/**
 * Finds the Chromium the page tests drive with puppeteer-core (DESIGN.md section 10 "Content"):
 * CHROMIUM_PATH, else Debian's /usr/bin/chromium (or chromium / chromium-browser on PATH), else
 * installs Debian's package with `apt-get install -y chromium` when running as root on a machine with
 * apt-get (progress shown), else fails with a message saying what to do.
 */
import fs from 'node:fs';
import { aptInstall, canAptInstall, onPath, works } from './system.js';

const CANDIDATES = ['/usr/bin/chromium', '/usr/bin/chromium-browser'];

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

export async function findOrInstallChromium(log: (line: string) => void = console.log): Promise<string> {
  const found = findChromium();
  if (found) return found;
  if (canAptInstall()) {
    log('Installing Chromium for the page tests (apt-get install -y chromium; first run only)...');
    await aptInstall('chromium', log);
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
