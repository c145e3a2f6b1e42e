// `npm run dev:cluster` (scripts/devCluster.ts) as a developer runs it, on ports, a data directory and
// a database of its own: once up, the entry point spreads requests over both APIs, whose sign-in
// challenges name the origin clients are given (localnet.json apiUrl), the Web UI is read-only and
// points at the API's codec, the namespace has its search attributes, the entry point is HAProxy and a
// real Prometheus scrapes both APIs, both workers and HAProxy (every target up, the route histogram
// queryable by template, the alert rules loaded and evaluated without error); Ctrl-C then, or a
// stop while the Temporal cluster is being prepared, leaves no process and no port behind.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { Connection } from '@temporalio/client';
import { dropDatabase } from '../../db/migrate.js';
import { freeLowPort } from '../../scripts/lib/ports.js';
import { defaultClusterPorts, serverPorts } from '../../scripts/lib/temporalCluster.js';
import { searchAttributeProblems } from '../../temporal/searchAttributes.js';
import { challengeProblem } from '@agent-passport/core/signInChallenge';
import { runLauncher } from '../support/launcherRun.js';
import { eventually } from '../support/eventually.js';

let dataDir: string;
let databaseUrl: string;

beforeAll(() => {
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'dev-cluster-'));
  const u = new URL(inject('databaseUrl'));
  u.pathname = `${u.pathname}_devcluster`.slice(0, 50);
  databaseUrl = u.toString();
});
afterAll(async () => {
  for (const suffix of ['', '_temporal', '_temporal_visibility']) {
    const u = new URL(databaseUrl);
    u.pathname = `${u.pathname}${suffix}`;
    await dropDatabase(u.toString()).catch(() => undefined);
  }
  fs.rmSync(dataDir, { recursive: true, force: true });
});

async function clusterPorts(): Promise<Record<string, number>> {
  // below the ephemeral range (no port-0 bind takes one meanwhile; membership ports fit a smallint)
  const taken = new Set<number>();
  const entry = await freeLowPort([0, 1, 2], taken);
  const temporal = await freeLowPort([0, 1, 2, 6, 10, -300, -299, -298, -294], taken);
  const p = () => freeLowPort([0], taken);
  const all: Record<string, number> = {
    PORT: entry,
    TEMPORAL_PORT: temporal,
    TEMPORAL_UI_PORT: await p(),
    LOCALNET_GRPC_PORT: await p(),
    LOCALNET_MIRROR_PORT: await p(),
    FACILITATOR_PORT: await p(),
    EVM_PORT: await p(),
    METRICS_PORT: await freeLowPort([0, 1, 2, 3], taken),
    HAPROXY_METRICS_PORT: await p(),
    PROMETHEUS_PORT: await p(),
  };
  for (let i = 1; i <= 3; i++) all[`METRICS_PORT_${i}`] = all.METRICS_PORT! + i;
  // probed afterwards too (runLauncher passes them as harmless extra variables)
  all.API_1_PORT = entry + 1;
  all.API_2_PORT = entry + 2;
  serverPorts(defaultClusterPorts(temporal)).forEach((p, i) => (all[`TEMPORAL_SERVER_PORT_${i}`] = p));
  return all;
}

describe('npm run dev:cluster', () => {
  it('comes up as the production topology, and Ctrl-C leaves nothing', async () => {
    const ports = await clusterPorts();
    const seen: Record<string, unknown> = {};
    const r = await runLauncher({
      script: path.join('scripts', 'devCluster.ts'),
      ports,
      // the per-address rate limit lives in the shared Redis, where other runs on this machine count 127.0.0.1 too
      env: { DEV_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379', RATE_LIMIT_MAX: '1000000' },
      at: (line) => line === 'Ctrl-C stops everything.',
      signal: 'SIGINT',
      onAt: async () => {
        const uptimes = new Set<number>();
        for (let i = 0; i < 4; i++) {
          const h = (await (await fetch(`http://127.0.0.1:${ports.PORT}/health`)).json()) as { status: string; uptimeSeconds: number };
          seen[`entry ${i}`] = h.status;
        }
        for (const p of [ports.API_1_PORT, ports.API_2_PORT]) {
          const res = await fetch(`http://127.0.0.1:${p}/health`);
          seen[`api ${p}`] = res.status;
          uptimes.add(((await res.json()) as { uptimeSeconds: number }).uptimeSeconds);
        }
        // what clients are given (localnet.json apiUrl) is the origin the challenges name, through the entry point
        const deployment = JSON.parse(fs.readFileSync(path.join(dataDir, 'localnet.json'), 'utf8')) as { apiUrl: string; accounts: { did: string }[] };
        seen.apiUrl = deployment.apiUrl;
        const did = deployment.accounts[0]!.did;
        const res = await fetch(`${deployment.apiUrl}/auth/challenge?did=${encodeURIComponent(did)}`);
        const ch = (await res.json()) as { challenge?: string };
        seen.challengeProblem = ch.challenge ? challengeProblem(ch.challenge, { did, origin: new URL(deployment.apiUrl).origin, now: Date.now() }) : `${res.status} ${JSON.stringify(ch)}`;
        for (const p of ['/catalog', '/openapi.json']) seen[p] = (await fetch(`${deployment.apiUrl}${p}`)).status;
        const settings = (await (await fetch(`http://127.0.0.1:${ports.TEMPORAL_UI_PORT}/api/v1/settings`)).json()) as { DisableWriteActions: boolean; Codec: { Endpoint: string } };
        seen.ui = { disableWriteActions: settings.DisableWriteActions, codec: settings.Codec.Endpoint };
        const connection = await Connection.connect({ address: `127.0.0.1:${ports.TEMPORAL_PORT}` });
        seen.searchAttributes = await searchAttributeProblems(connection, 'default');
        await connection.close();
        // Prometheus: every target up (it scrapes every 5 s), the route histogram by template, the rules evaluated
        const prometheus = `http://127.0.0.1:${ports.PROMETHEUS_PORT}`;
        const query = async (q: string) => ((await (await fetch(`${prometheus}/api/v1/query?query=${encodeURIComponent(q)}`)).json()) as { data: { result: { metric: Record<string, string>; value: [number, string] }[] } }).data.result;
        const up = await eventually(
          async () => Object.fromEntries((await query('up')).map((r) => [`${r.metric.job} ${r.metric.instance}`, r.value[1]])),
          (u) => Object.keys(u).length === 5 && Object.values(u).every((v) => v === '1'),
          60_000,
          1_000,
        );
        seen.targets = Object.entries(up).map(([k, v]) => `${k.replace(/127\.0\.0\.1:\d+/, 'port')}=${v}`).sort();
        seen.catalogSeries = await eventually(
          async () => (await query('sum by (route) (agent_passport_http_request_duration_seconds_count{job="api",route="/catalog"})')).map((r) => r.metric.route),
          (routes) => routes.length > 0,
          30_000,
          1_000,
        );
        seen.temporalPollers = (await query('sum(temporal_num_pollers{job="worker",poller_type="workflow_task"}) > 0')).length;
        const rules = await eventually(
          async () => ((await (await fetch(`${prometheus}/api/v1/rules`)).json()) as { data: { groups: { rules: { name: string; health: string; lastEvaluation: string }[] }[] } }).data.groups.flatMap((g) => g.rules),
          (list) => list.length > 0 && list.every((r) => !r.lastEvaluation.startsWith('0001')),
          30_000,
          1_000,
        );
        seen.rules = { count: rules.length, unhealthy: rules.filter((r) => r.health !== 'ok').map((r) => r.name) };
      },
    });
    expect(r.output, r.report).toContain('Agent passport cluster is up');
    expect(seen, r.report).toMatchObject({
      'entry 0': 'ok',
      'entry 3': 'ok',
      [`api ${ports.API_1_PORT}`]: 200,
      [`api ${ports.API_2_PORT}`]: 200,
      ui: { disableWriteActions: true, codec: `http://localhost:${ports.API_1_PORT}/codec` },
      searchAttributes: { missing: [], wrongType: [] },
      apiUrl: `http://127.0.0.1:${ports.PORT}`,
      challengeProblem: null,
      '/catalog': 200,
      '/openapi.json': 200,
      targets: ['api port=1', 'api port=1', 'haproxy port=1', 'worker port=1', 'worker port=1'],
      catalogSeries: ['/catalog'],
      temporalPollers: 1,
      rules: { count: 10, unhealthy: [] },
    });
    expect(r.output, r.report).toContain('PostgreSQL persistence and visibility');
    expect(r.leftProcesses, r.report).toEqual([]);
    expect(r.openPorts, r.report).toEqual([]);
    expect(r.code, r.report).toBe(0);
  });

  it('a stop while the Temporal cluster is being prepared leaves nothing', async () => {
    const ports = await clusterPorts();
    const r = await runLauncher({
      script: path.join('scripts', 'devCluster.ts'),
      ports,
      env: { DEV_DATA_DIR: dataDir, DATABASE_URL: databaseUrl, REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379' },
      at: (line) => line.includes('schema postgresql/v12/visibility installed'),
      signal: 'SIGTERM',
    });
    expect(r.output, r.report).toContain('[launcher] starting temporal cluster');
    expect(r.output, r.report).not.toContain('Agent passport cluster is up');
    expect(r.leftProcesses, r.report).toEqual([]);
    expect(r.openPorts, r.report).toEqual([]);
    expect(r.code, r.report).toBe(0);
  });
});
