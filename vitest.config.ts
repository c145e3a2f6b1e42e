import { defineConfig } from 'vitest/config';
import { consoleToRunLog } from './test/support/consoleLog.js';

// Two projects: unit (pure, no services) and integration (real Temporal dev server, PostgreSQL,
// localnet and anvil). Two cores here: at most two test files run at once.
export default defineConfig({
  test: {
    maxWorkers: 2,
    // the tests' console output also goes to the integration run's log directory, for the secrets scan
    onConsoleLog: (log) => consoleToRunLog(log),
    projects: [
      {
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts'],
          environment: 'node',
        },
      },
      {
        test: {
          name: 'integration',
          include: ['test/**/*.test.ts'],
          exclude: ['test/unit/**', 'node_modules/**'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          pool: 'forks',
        },
      },
    ],
  },
});
