/**
 * Where the cluster topology's one Redis comes from (shared rate-limit counters of the API instances):
 * REDIS_URL if set; else a server already listening on 127.0.0.1:6379; else `redis-server` (on PATH, or
 * Debian's package installed with apt-get when running as root, progress shown) started on a free port
 * with its data in dataDir; else the start fails saying what to install.
 */
import fs from 'node:fs';
import { aptInstall, canAptInstall, onPath } from './system.js';
import { startChild, waitForReady } from './children.js';
import { freePort, isPortOpen } from './ports.js';

export interface ResolvedRedis {
  url: string;
  source: 'REDIS_URL' | 'local server' | 'redis-server';
  stop(): Promise<void>;
}

export async function resolveRedis(o: { redisUrl?: string; dataDir: string; log: (line: string) => void; signal?: AbortSignal }): Promise<ResolvedRedis> {
  if (o.redisUrl) return { url: o.redisUrl, source: 'REDIS_URL', stop: async () => {} };
  if (await isPortOpen(6379)) return { url: 'redis://127.0.0.1:6379', source: 'local server', stop: async () => {} };
  let bin = onPath('redis-server');
  if (!bin && canAptInstall()) {
    o.log('Installing redis-server (apt-get install -y redis-server; first run only)...');
    await aptInstall('redis-server', o.log);
    bin = onPath('redis-server');
  }
  if (!bin) throw new Error('Redis is needed (the API instances share their rate-limit counters): set REDIS_URL, run one on 127.0.0.1:6379, or install redis-server (Debian/Ubuntu: `sudo apt-get install redis-server`)');
  fs.mkdirSync(o.dataDir, { recursive: true });
  const port = await freePort();
  const child = startChild('redis', bin, ['--port', String(port), '--bind', '127.0.0.1', '--dir', o.dataDir, '--save', '60 1', '--appendonly', 'no', '--protected-mode', 'yes']);
  try {
    await waitForReady(child, { what: 'redis-server', ready: () => isPortOpen(port), signal: o.signal, log: o.log });
  } catch (err) {
    await child.stop();
    throw err;
  }
  return { url: `redis://127.0.0.1:${port}`, source: 'redis-server', stop: () => child.stop() };
}
