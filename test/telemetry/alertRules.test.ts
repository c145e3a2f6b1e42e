// The alert rules, their unit tests and the dashboard (issue 30): `promtool check rules` accepts
// deploy/prometheus/alerts.rules.yml, `promtool test rules` passes deploy/prometheus/alerts.test.yml (each
// alert fires on what should wake someone and stays silent otherwise), every alert has a test that makes it
// fire and a runbook line in docs/operations.md, and every query of the Grafana dashboard is valid PromQL
// over metrics the service (or the Temporal SDK, HAProxy, Prometheus) exports. promtool comes from Debian's
// prometheus package, installed here when missing (scripts/lib/prometheus.ts).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { promtool, RULES_DIR } from '../../scripts/lib/prometheus.js';
import { registry } from '../../telemetry/metrics.js';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const rulesFile = path.join(RULES_DIR, 'alerts.rules.yml');
const testsFile = path.join(RULES_DIR, 'alerts.test.yml');

interface RuleFile {
  groups: { name: string; rules: { alert?: string; expr: string; annotations?: Record<string, string> }[] }[];
}
const alerts = (parse(fs.readFileSync(rulesFile, 'utf8')) as RuleFile).groups.flatMap((g) => g.rules.filter((r) => r.alert));

describe('alert rules and dashboard', () => {
  it('promtool check rules accepts the rule file', { timeout: 300_000 }, async () => {
    const r = await promtool(['check', 'rules', rulesFile]);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toContain(`SUCCESS: ${alerts.length} rules found`);
  });

  it('promtool check config accepts the deployment\'s Prometheus configuration', { timeout: 300_000 }, async () => {
    const r = await promtool(['check', 'config', path.join(RULES_DIR, 'prometheus.yml')]);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
  });

  it('promtool test rules passes the alerts unit tests', { timeout: 300_000 }, async () => {
    const r = await promtool(['test', 'rules', testsFile]);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stdout).toContain('SUCCESS');
  });

  it('every alert is made to fire by a unit test and has a runbook line in docs/operations.md', () => {
    const tests = parse(fs.readFileSync(testsFile, 'utf8')) as { tests: { alert_rule_test?: { alertname: string; exp_alerts: unknown[] }[] }[] };
    const firing = new Set(tests.tests.flatMap((t) => (t.alert_rule_test ?? []).filter((a) => a.exp_alerts.length > 0).map((a) => a.alertname)));
    const operations = fs.readFileSync(path.join(root, 'docs', 'operations.md'), 'utf8');
    for (const a of alerts) {
      expect(firing.has(a.alert!), `${a.alert} has no test that makes it fire`).toBe(true);
      expect(a.annotations?.runbook, a.alert).toBe(`docs/operations.md#${a.alert!.toLowerCase()}`);
      expect(operations, `docs/operations.md has no section for ${a.alert}`).toMatch(new RegExp(`^#+ ${a.alert}$`, 'm'));
    }
  });

  it("the dashboard's queries are valid PromQL over exported metrics", { timeout: 300_000 }, async () => {
    const dashboard = JSON.parse(fs.readFileSync(path.join(root, 'deploy', 'grafana', 'agent-passport.json'), 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const exprs = dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => ({ panel: p.title, expr: t.expr.replaceAll('$api_job', 'api').replaceAll('$worker_job', 'worker') })));
    expect(exprs.length).toBeGreaterThan(20);
    // promtool checks PromQL only inside rule files: each query becomes a recording rule
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'dashboard-rules-')), 'dashboard.rules.yml');
    fs.writeFileSync(file, stringify({ groups: [{ name: 'dashboard', rules: exprs.map((e, i) => ({ record: `dashboard:query_${i}`, expr: e.expr })) }] }));
    const r = await promtool(['check', 'rules', file]);
    expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
    // our own metric names must exist in the registry (a renamed metric breaks its panel here, not in production)
    const ours = new Set((await registry.getMetricsAsJSON()).map((m) => m.name));
    for (const { panel, expr } of exprs) {
      for (const name of expr.match(/\bagent_passport_[a-z_]+/g) ?? []) {
        const base = name.replace(/_(bucket|count|sum)$/, '');
        expect(ours.has(name) || ours.has(base), `panel "${panel}": ${name} is not a metric of telemetry/metrics.ts`).toBe(true);
      }
    }
  });
});
