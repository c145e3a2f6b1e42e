// The API's RED metrics and quota refusals (issue 30, api/plugins/metrics.ts), in process: every answer
// counts under its route's template (never the concrete path), requests no route matched under
// route="unmatched", every 429 under its error code; an app without METRICS_PORT registers no hook and
// counts nothing.
import { afterEach, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { httpRequestDuration, quotaRefusals, registry } from '../../telemetry/metrics.js';
import { buildTestApp } from '../support/app.js';

const apps: FastifyInstance[] = [];
afterEach(async () => {
  for (const a of apps.splice(0)) await a.close();
});

async function app(env: Record<string, string>) {
  const a = await buildTestApp(env);
  apps.push(a);
  return a;
}

/** the histogram's count for these labels (0 when the series does not exist) */
async function count(labels: { method: string; route: string; status: string }): Promise<number> {
  const m = await httpRequestDuration.get();
  return m.values.find((v) => v.metricName === 'agent_passport_http_request_duration_seconds_count' && v.labels.method === labels.method && v.labels.route === labels.route && String(v.labels.status) === labels.status)?.value ?? 0;
}

async function refusals(code: string): Promise<number> {
  return (await quotaRefusals.get()).values.find((v) => v.labels.code === code)?.value ?? 0;
}

describe('RED metrics per route template', () => {
  it('counts answers under the route template and every unmatched path as one series', async () => {
    const a = await app({ METRICS_PORT: '0' });
    const rule = { method: 'GET', route: '/rules/:id', status: '404' };
    const unmatched = { method: 'GET', route: 'unmatched', status: '404' };
    const health = { method: 'GET', route: '/health', status: '200' };
    const before = [await count(rule), await count(unmatched), await count(health)];
    expect((await a.inject('/health')).statusCode).toBe(200);
    // a route that matched but found nothing is its template's 404, never a path of its own
    expect((await a.inject('/rules/no-such-rule-777777')).statusCode).toBe(404);
    for (const p of ['/nope-1', '/nope-2/deeper', '/passports-typo?x=1']) expect((await a.inject(p)).statusCode).toBe(404);
    expect(await count(health)).toBe(before[2]! + 1);
    expect(await count(unmatched)).toBe(before[1]! + 3);
    expect(await count(rule)).toBe(before[0]! + 1);
    const text = await registry.metrics();
    expect(text).not.toMatch(/777777|nope-1|nope-2|passports-typo/);
  });

  it('counts every 429 under its error code', async () => {
    const a = await app({ METRICS_PORT: '0', RATE_LIMIT_MAX: '2' });
    const before = await refusals('rate_limit_exceeded');
    const statuses = [];
    for (let i = 0; i < 4; i++) statuses.push((await a.inject('/catalog')).statusCode);
    expect(statuses).toEqual([200, 200, 429, 429]);
    expect(await refusals('rate_limit_exceeded')).toBe(before + 2);
  });

  it('an app without METRICS_PORT counts nothing', async () => {
    const a = await app({});
    const health = { method: 'GET', route: '/health', status: '200' };
    const before = await count(health);
    for (let i = 0; i < 3; i++) expect((await a.inject('/health')).statusCode).toBe(200);
    expect(await count(health)).toBe(before);
  });
});
