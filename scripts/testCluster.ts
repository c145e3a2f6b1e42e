/**
 * npm run test:cluster (issue 22; not part of `npm test`): the tests of test/cluster/ on the production
 * topology: the Temporal server itself on PostgreSQL persistence and SQL visibility, two workers and two
 * APIs behind one entry point, one Redis. First makes sure of what they need: the Temporal server, its
 * SQL tool and the Web UI server in ~/.cache/agent-passport/bin (built from the Go module proxy on first
 * use, progress shown), and a Redis (REDIS_URL, 127.0.0.1:6379, or redis-server started here).
 * Extra arguments go to vitest (e.g. `npm run test:cluster -- test/cluster/deploy.test.ts`).
 */
import { spawn } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { findOrBuildClusterBinaries } from './lib/temporalCluster.js';
import { resolveRedis } from './lib/redis.js';

const log = (line: string) => console.log(`[test:cluster] ${line}`);
const started = Date.now();
const binaries = await findOrBuildClusterBinaries(log);
log(`Temporal server ${binaries.server}, SQL tool ${binaries.sqlTool}`);
const redis = await resolveRedis({ redisUrl: process.env.REDIS_URL, dataDir: fs.mkdtempSync(path.join(os.tmpdir(), 'test-cluster-redis-')), log });
log(`Redis: ${redis.source} ${redis.url}`);

const env: NodeJS.ProcessEnv = { ...process.env, TEST_CLUSTER: '1', REDIS_URL: redis.url };
if (process.stdout.isTTY && !env.FORCE_COLOR) env.FORCE_COLOR = '1';
const code = await new Promise<number>((resolve) => {
  const child = spawn('npx', ['vitest', 'run', '--project', 'cluster', ...process.argv.slice(2)], { stdio: 'inherit', env });
  child.on('close', (c, signal) => resolve(c ?? (signal ? 1 : 0)));
});
await redis.stop();
log(`${code === 0 ? 'passed' : 'FAILED'} in ${Math.round((Date.now() - started) / 1000)} s`);
process.exit(code);
