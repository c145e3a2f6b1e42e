/**
 * The entry point of `npm run dev:cluster` and `npm run test:cluster`: Debian's haproxy (found on PATH or
 * HAPROXY_PATH, else installed with `apt-get install -y --no-install-recommends haproxy` when running as
 * root, as Chromium is), driven by deploy/haproxy.cfg, the file docker-compose.yml mounts, rendered with
 * local addresses: the API frontend and the metrics frontend bound to 127.0.0.1 ports, the API servers
 * at their local ports, no Docker DNS resolver. Everything else (balancing, health checks, retry on a
 * refused connection with redispatch, the JSON error bodies, the Prometheus exporter) is production's.
 */
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { aptInstall, canAptInstall, onPath, works } from './system.js';
import { startChild, waitForReady, type ManagedChild } from './children.js';
import { isPortOpen } from './ports.js';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
export const HAPROXY_CFG = path.join(root, 'deploy', 'haproxy.cfg');

function findHaproxy(): string | undefined {
  const explicit = process.env.HAPROXY_PATH;
  if (explicit) {
    if (!works(explicit, ['-v'])) throw new Error(`HAPROXY_PATH=${explicit} is not a working haproxy binary`);
    return explicit;
  }
  const p = onPath('haproxy') ?? (fs.existsSync('/usr/sbin/haproxy') ? '/usr/sbin/haproxy' : undefined);
  return p && works(p, ['-v']) ? p : undefined;
}

export async function findOrInstallHaproxy(log: (line: string) => void = console.log): Promise<string> {
  let bin = findHaproxy();
  if (!bin && canAptInstall()) {
    log('Installing HAProxy (apt-get install -y --no-install-recommends haproxy; first run only)...');
    await aptInstall('haproxy', log);
    // the package's own service (port-less default configuration) is not ours to run
    if (onPath('invoke-rc.d')) spawnSync('invoke-rc.d', ['haproxy', 'stop'], { timeout: 30_000 });
    bin = findHaproxy();
  }
  if (!bin) throw new Error('HAProxy not found (the cluster\'s entry point). Install it (Debian/Ubuntu: `sudo apt-get install --no-install-recommends haproxy`) or set HAPROXY_PATH.');
  return bin;
}

export interface HaproxyLayout {
  /** the API frontend's port (the service's public entry point) */
  entryPort: number;
  /** HAProxy's own metrics (GET /metrics) */
  metricsPort: number;
  /** the API instances, in order: api-1, api-2, ... */
  apiPorts: number[];
  host?: string;
}

/** deploy/haproxy.cfg with local addresses (see the file's comment); refuses a file whose shape changed. */
export function renderHaproxyConfig(layout: HaproxyLayout, source = fs.readFileSync(HAPROXY_CFG, 'utf8')): string {
  const host = layout.host ?? '127.0.0.1';
  const must = (text: string, pattern: RegExp, what: string) => {
    if (!pattern.test(text)) throw new Error(`deploy/haproxy.cfg: ${what} not found; update scripts/lib/haproxy.ts renderHaproxyConfig with the file`);
    return text;
  };
  let out = source;
  out = must(out, /^resolvers docker\n(?:[ \t]+.*\n)+/m, 'the resolvers section').replace(/^resolvers docker\n(?:[ \t]+.*\n)+\n?/m, '');
  out = must(out, /^(\s+)bind :3000$/m, 'bind :3000').replace(/^(\s+)bind :3000$/m, `$1bind ${host}:${layout.entryPort}`);
  out = must(out, /^(\s+)bind :8405$/m, 'bind :8405').replace(/^(\s+)bind :8405$/m, `$1bind ${host}:${layout.metricsPort}`);
  out = must(out, /^(\s+default-server) init-addr \S+ resolvers docker /m, 'the default-server line').replace(/^(\s+default-server) init-addr \S+ resolvers docker /m, '$1 ');
  const servers = /^(\s+)server api-\d+ \S+\n?/gm;
  const indent = must(out, servers, 'the api servers').match(/^(\s+)server api-1 /m)?.[1] ?? '  ';
  let first = true;
  out = out.replace(servers, () => {
    if (!first) return '';
    first = false;
    return layout.apiPorts.map((p, i) => `${indent}server api-${i + 1} ${host}:${p}\n`).join('');
  });
  return out;
}

export interface HaproxyStats {
  answered: Record<string, number>;
  redispatched: number;
  retried: number;
  serversUp: Record<string, boolean>;
}

export interface Haproxy {
  url: string;
  port: number;
  metricsUrl: string;
  child: ManagedChild;
  /** from HAProxy's own metrics: answers per API instance, requests redispatched or retried, instances up (after stop(): the last figures) */
  stats(): Promise<HaproxyStats>;
  stop(): Promise<void>;
}

/** A value per label set of one metric in an exposition, summed over the other labels. */
function sumBy(text: string, metric: string, label: string | null, where: Record<string, string> = {}): Record<string, number> {
  const out: Record<string, number> = {};
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${metric}{`) && !line.startsWith(`${metric} `)) continue;
    const labels = Object.fromEntries([...(line.match(/\{(.*)\}/)?.[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.entries(where).some(([k, v]) => labels[k] !== v)) continue;
    const key = label ? (labels[label] ?? '') : '';
    out[key] = (out[key] ?? 0) + Number(line.slice(line.lastIndexOf(' ') + 1));
  }
  return out;
}

/** Starts haproxy on the rendered configuration in `dir`; resolves once both frontends accept connections. */
export async function startHaproxy(o: HaproxyLayout & { dir: string; log?: (line: string) => void; output?: (line: string) => void; signal?: AbortSignal }): Promise<Haproxy> {
  const bin = await findOrInstallHaproxy(o.log);
  fs.mkdirSync(o.dir, { recursive: true });
  const file = path.join(o.dir, 'haproxy.cfg');
  fs.writeFileSync(file, renderHaproxyConfig(o));
  const check = spawnSync(bin, ['-c', '-q', '-f', file], { encoding: 'utf8', timeout: 30_000 });
  if (check.status !== 0) throw new Error(`haproxy refuses ${file}: ${check.stdout}${check.stderr}`);
  const child = startChild('haproxy', bin, ['-db', '-f', file], { output: o.output });
  try {
    await waitForReady(child, { what: 'HAProxy', ready: async () => (await isPortOpen(o.entryPort)) && (await isPortOpen(o.metricsPort)), signal: o.signal, log: o.log ?? (() => {}), pollMs: 100 });
  } catch (err) {
    await child.stop();
    throw err;
  }
  const host = o.host ?? '127.0.0.1';
  const metricsUrl = `http://${host}:${o.metricsPort}/metrics`;
  const read = async (): Promise<HaproxyStats> => {
    const text = await (await fetch(metricsUrl)).text();
    const status = sumBy(text, 'haproxy_server_status', 'server', { proxy: 'apis', state: 'UP' });
    return {
      answered: sumBy(text, 'haproxy_server_http_responses_total', 'server', { proxy: 'apis' }),
      redispatched: sumBy(text, 'haproxy_backend_redispatch_warnings_total', null, { proxy: 'apis' })[''] ?? 0,
      retried: sumBy(text, 'haproxy_backend_retry_warnings_total', null, { proxy: 'apis' })[''] ?? 0,
      serversUp: Object.fromEntries(o.apiPorts.map((_, i) => [`api-${i + 1}`, (status[`api-${i + 1}`] ?? 0) === 1])),
    };
  };
  // the counters die with the process: stop() keeps the last reading for a report made afterwards
  let final: HaproxyStats | undefined;
  return {
    url: `http://${host}:${o.entryPort}`,
    port: o.entryPort,
    metricsUrl,
    child,
    stats: async () => final ?? read(),
    async stop() {
      if (!final) final = await read().catch(() => ({ answered: {}, redispatched: 0, retried: 0, serversUp: {} }));
      await child.stop();
    },
  };
}
