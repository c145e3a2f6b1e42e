// The short chaos run (issue 13): a few dozen operations (passports bought over x402, task
// lifecycles) through the HTTP API of an API process, a worker process and a localnet process,
// while a handful of SIGKILLs hit each of them and localnet faults are switched on; then the
// ledger audit through the mirror (test/chaos/chaos.ts). `npm run test:chaos` is the full run.
import { describe, expect, inject, it } from 'vitest';
import { formatReport, runChaos } from './chaos.js';

describe('chaos: SIGKILLs of worker, API and localnet under load', () => {
  it('nothing minted twice, paid twice, lost; every task has a workflow and a projection that agree', { timeout: 240_000 }, async () => {
    const lines: string[] = [];
    const report = await runChaos({
      issuances: 8,
      lifecycles: 16,
      kills: 4,
      targets: ['worker', 'api', 'localnet'],
      faults: true,
      concurrency: 6,
      settleMs: 60_000,
      opTimeoutMs: 120_000,
      // issue 23: payments are settled one way or the other 15 s after they were recorded, whether or not the client comes back
      reconcileAfterMs: 15_000,
      reconcileEveryMs: 2_000,
      abandonRate: 0.3,
      seed: Number(process.env.CHAOS_SEED ?? Date.now() % 1_000_000),
      databaseUrl: inject('databaseUrl'),
      temporalAddress: inject('temporalAddress'),
      log: (line) => lines.push(line),
    });
    const table = formatReport(report);
    console.log(`${lines.join('\n')}\n${table}`);
    expect(report.violations, table).toEqual([]);
    expect(report.kills.worker + report.kills.api + report.kills.localnet, table).toBeGreaterThan(0);
    // the run did something: passports issued and lifecycles finished despite the kills
    expect(report.passportsIssued, table).toBeGreaterThan(1);
    expect(report.completed + report.cancelled, table).toBeGreaterThan(0);
  });
});
