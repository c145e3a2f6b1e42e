/**
 * vitest's onConsoleLog (vitest.config.ts; it runs in vitest's main process): every console line of
 * the test processes also goes to `console.log` in the integration run's log directory, which the
 * secrets scan reads (global-setup names the directory in AGENT_PASSPORT_SECRETS_DIR). Lines are
 * printed as usual.
 */
import fs from 'node:fs';
import path from 'node:path';

export const SECRETS_DIR_ENV = 'AGENT_PASSPORT_SECRETS_DIR';

export function consoleToRunLog(log: string): void {
  const dir = process.env[SECRETS_DIR_ENV];
  if (!dir || !fs.existsSync(dir)) return;
  fs.mkdirSync(path.join(dir, 'logs'), { recursive: true });
  fs.appendFileSync(path.join(dir, 'logs', 'console.log'), log.endsWith('\n') ? log : `${log}\n`);
}
