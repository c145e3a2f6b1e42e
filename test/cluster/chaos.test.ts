// The chaos run (test/chaos/chaos.ts, its clients and its ledger audit reused) on the production
// topology, its workers and APIs run as production (encrypted payloads): passports bought and task lifecycles run through the entry point while one worker, one API
// and the Temporal server process itself are killed with SIGKILL and come back. Every lifecycle
// finishes, nothing is minted or paid twice, no task is lost; the second API answers while the first
// is down.
import { afterAll, describe, expect, inject, it } from 'vitest';
import { formatReport, runChaos } from '../chaos/chaos.js';
import { ClusterChaosStack, clusterNamespace, productionSecrets, redisUrl } from './stack.js';

let stack: ClusterChaosStack | undefined;
let closeNamespace: (() => Promise<void>) | undefined;
afterAll(async () => {
  // the run stops its stack itself; this covers a run cut short (the test's timeout), which would
  // otherwise leave its worker, API and localnet processes running
  await stack?.stop().catch(() => undefined);
  await closeNamespace?.();
});

describe('chaos on the cluster: kill -9 of a worker, an API and the Temporal server', () => {
  it('every lifecycle finishes, nothing minted or paid twice, the second API keeps serving', async () => {
    const ns = await clusterNamespace('chaos');
    closeNamespace = ns.close;
    const secrets = productionSecrets(ns.namespace);
    const lines: string[] = [];
    const report = await runChaos({
      issuances: Number(process.env.CLUSTER_CHAOS_ISSUANCES ?? 12),
      lifecycles: Number(process.env.CLUSTER_CHAOS_LIFECYCLES ?? 40),
      kills: Number(process.env.CLUSTER_CHAOS_KILLS ?? 6),
      targets: ['worker', 'api', 'temporal'],
      faults: false,
      concurrency: 6,
      settleMs: 180_000,
      opTimeoutMs: 300_000,
      seed: Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000),
      databaseUrl: inject('databaseUrl'),
      temporalAddress: inject('temporalAddress'),
      namespace: ns.namespace,
      payloadCodecKey: secrets.codecKey,
      log: (line) => {
        lines.push(line);
        if (process.env.CLUSTER_CHAOS_VERBOSE) console.log(line); // as it happens (else printed at the end)
      },
      makeStack: (parts) => (stack = new ClusterChaosStack(parts, { namespace: ns.namespace, redisUrl: redisUrl(), production: secrets.env })),
    });
    const table = formatReport(report);
    const entryStats = await stack!.entry.stats();
    const extra = [
      `second API while the first was down: ${stack!.secondApiAnswers.map((a) => `${a.status} in ${a.ms} ms`).join(', ') || 'no API kill'}`,
      `Temporal server back after kill -9: ${stack!.temporalDowntimesMs.map((ms) => `${(ms / 1000).toFixed(1)} s`).join(', ') || 'no server kill'}`,
      `entry point (HAProxy): ${JSON.stringify(entryStats)}`,
    ].join('\n');
    console.log(`${lines.join('\n')}\n${table}\n${extra}`);
    expect(report.violations, table).toEqual([]);
    // each kind was killed at least once, and the run did something despite the kills
    expect(report.kills.worker, table).toBeGreaterThan(0);
    expect(report.kills.api, table).toBeGreaterThan(0);
    expect(report.kills.temporal, table).toBeGreaterThan(0);
    expect(report.passportsIssued, table).toBeGreaterThan(1);
    expect(report.completed + report.cancelled, table).toBeGreaterThan(0);
    expect(report.open, table).toBe(0);
    // the second API answered directly each time the first was down, and both served through the entry point
    expect(stack!.secondApiAnswers.length, extra).toBe(report.kills.api);
    for (const a of stack!.secondApiAnswers) expect(a.status, extra).toBe(200);
    for (const n of Object.values(entryStats.answered)) expect(n, extra).toBeGreaterThan(0);
    expect(Object.keys(entryStats.answered).sort(), extra).toEqual(['api-1', 'api-2']);
  });
});
