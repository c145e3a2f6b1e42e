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
          exclude: ['test/unit/**', 'test/cluster/**', 'node_modules/**'],
          environment: 'node',
          globalSetup: ['test/support/global-setup.ts'],
          testTimeout: 120_000,
          hookTimeout: 180_000,
          pool: 'forks',
        },
      },
      // `npm run test:cluster` only (scripts/testCluster.ts sets TEST_CLUSTER): the Temporal server on
      // PostgreSQL, two workers and two APIs per file; one file at a time (a file kills the server)
      ...(process.env.TEST_CLUSTER === '1'
        ? [
            {
              test: {
                name: 'cluster',
                include: ['test/cluster/**/*.test.ts'],
                environment: 'node',
                globalSetup: ['test/cluster/global-setup.ts'],
                testTimeout: 600_000,
                hookTimeout: 600_000,
                pool: 'forks' as const,
                fileParallelism: false,
              },
            },
          ]
        : []),
    ],
  },
});
