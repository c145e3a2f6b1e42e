/**
 * Prometheus and promtool from Debian's `prometheus` package (NOTES.md, fourth round): found on PATH
 * (or PROMETHEUS_PATH / PROMTOOL_PATH), else installed with `apt-get install -y --no-install-recommends
 * prometheus` when running as root on a machine with apt-get (progress shown), as Chromium is for the
 * page tests. The package starts its own service on :9090 where an init system runs it: that one is
 * stopped, since the launchers and tests run their own Prometheus on their own ports.
 *
 * Used by the rule tests (`promtool check rules`, `promtool test rules`, `promtool check metrics`), by
 * `npm run dev:cluster` (a Prometheus scraping both APIs, both workers and HAProxy, the alert rules of
 * deploy/prometheus/ loaded) and by `npm run test:cluster`.
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { stringify } from 'yaml';
import { aptInstall, canAptInstall, onPath, works } from './system.js';
import { startChild, waitForReady, type ManagedChild } from './children.js';

const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..', '..');
/** the project's alert rules (and their unit tests beside them) */
export const RULES_DIR = path.join(root, 'deploy', 'prometheus');
export const RULE_FILES = ['alerts.rules.yml'].map((f) => path.join(RULES_DIR, f));

function find(name: 'prometheus' | 'promtool'): string | undefined {
  const explicit = process.env[name === 'prometheus' ? 'PROMETHEUS_PATH' : 'PROMTOOL_PATH'];
  if (explicit) {
    if (!works(explicit)) throw new Error(`${name === 'prometheus' ? 'PROMETHEUS_PATH' : 'PROMTOOL_PATH'}=${explicit} is not a working ${name} binary`);
    return explicit;
  }
  const p = onPath(name) ?? (fs.existsSync(`/usr/bin/${name}`) ? `/usr/bin/${name}` : undefined);
  return p && works(p) ? p : undefined;
}

/** Stops the service Debian's package may have started (an init script; no systemd in containers). */
function stopPackagedService(log: (line: string) => void): void {
  for (const [cmd, args] of [
    ['invoke-rc.d', ['prometheus', 'stop']],
    ['service', ['prometheus', 'stop']],
  ] as const) {
    if (!onPath(cmd)) continue;
    const r = spawnSync(cmd, [...args], { encoding: 'utf8', timeout: 30_000 });
    if (r.status === 0) return log(`stopped the packaged prometheus service (${cmd} ${args.join(' ')})`);
  }
}

/** prometheus and promtool, installed from Debian's package when missing. */
export async function findOrInstallPrometheus(log: (line: string) => void = console.log): Promise<{ prometheus: string; promtool: string }> {
  let prometheus = find('prometheus');
  let promtool = find('promtool');
  if ((!prometheus || !promtool) && canAptInstall()) {
    log('Installing Prometheus and promtool (apt-get install -y --no-install-recommends prometheus; first run only)...');
    await aptInstall('prometheus', log);
    stopPackagedService(log);
    prometheus = find('prometheus');
    promtool = find('promtool');
  }
  if (!prometheus || !promtool) {
    throw new Error(
      'Prometheus and promtool not found (the alert rule tests and dev:cluster need them). Install them (Debian/Ubuntu: `sudo apt-get install --no-install-recommends prometheus`) or set PROMETHEUS_PATH and PROMTOOL_PATH.',
    );
  }
  return { prometheus, promtool };
}

export interface ToolRun {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs promtool with `args` (and `stdin`, e.g. a scrape for `check metrics`). */
export async function promtool(args: string[], o: { stdin?: string; cwd?: string } = {}): Promise<ToolRun> {
  const { promtool: bin } = await findOrInstallPrometheus((line) => process.stderr.write(`[promtool] ${line}\n`));
  return new Promise((resolve) => {
    const child = spawn(bin, args, { cwd: o.cwd ?? root, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', (err) => resolve({ code: null, stdout, stderr: `${stderr}${err.message}` }));
    child.on('close', (code) => resolve({ code, stdout, stderr }));
    child.stdin.end(o.stdin ?? '');
  });
}

/** One scrape job: its name and the host:port targets it scrapes (at /metrics). */
export interface ScrapeJob {
  job: string;
  targets: string[];
  /** labels on every target of the job (e.g. { role: 'api' }) */
  labels?: Record<string, string>;
}

/** prometheus.yml for these jobs, the project's rule files loaded. */
export function prometheusConfig(o: { jobs: ScrapeJob[]; scrapeIntervalS?: number; evaluationIntervalS?: number; ruleFiles?: string[] }): string {
  return stringify({
    global: { scrape_interval: `${o.scrapeIntervalS ?? 15}s`, evaluation_interval: `${o.evaluationIntervalS ?? 15}s` },
    rule_files: o.ruleFiles ?? RULE_FILES,
    scrape_configs: o.jobs.map((j) => ({ job_name: j.job, static_configs: [{ targets: j.targets, ...(j.labels ? { labels: j.labels } : {}) }] })),
  });
}

export interface RunningPrometheus {
  url: string;
  port: number;
  child: ManagedChild;
  /** an instant query's result vector (GET /api/v1/query) */
  query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]>;
  stop(): Promise<void>;
}

/**
 * Starts a Prometheus on 127.0.0.1:port with its TSDB in `dir`, scraping `jobs` with the project's
 * alert rules loaded; resolves once /-/ready answers. `output` gets its log lines.
 */
export async function startPrometheus(o: {
  dir: string;
  port: number;
  jobs: ScrapeJob[];
  scrapeIntervalS?: number;
  evaluationIntervalS?: number;
  log?: (line: string) => void;
  output?: (line: string) => void;
  signal?: AbortSignal;
}): Promise<RunningPrometheus> {
  const { prometheus } = await findOrInstallPrometheus(o.log);
  fs.mkdirSync(path.join(o.dir, 'data'), { recursive: true });
  const configFile = path.join(o.dir, 'prometheus.yml');
  fs.writeFileSync(configFile, prometheusConfig({ jobs: o.jobs, scrapeIntervalS: o.scrapeIntervalS, evaluationIntervalS: o.evaluationIntervalS }));
  const url = `http://127.0.0.1:${o.port}`;
  const child = startChild('prometheus', prometheus, [
    `--config.file=${configFile}`,
    `--storage.tsdb.path=${path.join(o.dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${o.port}`,
    '--storage.tsdb.retention.time=2d',
  ], { output: o.output });
  const ready = async () => (await fetch(`${url}/-/ready`, { signal: AbortSignal.timeout(2_000) }).catch(() => null))?.status === 200;
  try {
    await waitForReady(child, { what: 'Prometheus', ready, signal: o.signal, log: o.log ?? (() => {}) });
  } catch (err) {
    await child.stop();
    throw err;
  }
  return {
    url,
    port: o.port,
    child,
    async query(expr) {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const body = (await res.json()) as { status: string; error?: string; data?: { result: { metric: Record<string, string>; value: [number, string] }[] } };
      if (body.status !== 'success') throw new Error(`query ${expr}: ${body.error ?? res.status}`);
      return body.data!.result;
    },
    stop: () => child.stop(),
  };
}
