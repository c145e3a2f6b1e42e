/** Builds the API for tests with a config assembled from explicit overrides (never the developer's environment). */
import { loadConfig, type Config } from '../../config/index.js';
import { buildApp } from '../../api/app.js';
import type { AppContext } from '../../api/context.js';
import { appLogStream, recordSecret } from './secrets.js';

export function testConfig(overrides: Record<string, string> = {}): Config {
  // a codec key a test made up is one of the secrets the scan looks for (test/support/secrets.ts)
  if (overrides.PAYLOAD_CODEC_KEY) recordSecret('PAYLOAD_CODEC_KEY', overrides.PAYLOAD_CODEC_KEY);
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', ...overrides });
}

export async function buildTestApp(overrides: Record<string, string> = {}, ctx: Partial<AppContext> = {}) {
  // integration runs log at info level to a file the secrets scan reads (test/support/secrets.ts)
  const stream = appLogStream();
  return buildApp({ config: testConfig(overrides), ...ctx }, { logger: stream ? { level: 'info', stream } : false });
}
