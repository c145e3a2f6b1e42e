/** Builds the API for tests with a config assembled from explicit overrides (never the developer's environment). */
import { loadConfig, type Config } from '../../config/index.js';
import { buildApp } from '../../api/app.js';
import type { AppContext } from '../../api/context.js';

export function testConfig(overrides: Record<string, string> = {}): Config {
  return loadConfig({ NODE_ENV: 'test', LOG_LEVEL: 'silent', ...overrides });
}

export async function buildTestApp(overrides: Record<string, string> = {}, ctx: Partial<AppContext> = {}) {
  return buildApp({ config: testConfig(overrides), ...ctx }, { logger: false });
}
