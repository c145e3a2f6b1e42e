import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { createSql, type Sql } from '../../db/client.js';
import { lazyTemporalClient } from '../../temporal/client.js';
import { buildTestApp, testConfig } from '../support/app.js';

describe('health and readiness', () => {
  let sql: Sql;
  beforeAll(() => {
    sql = createSql(inject('databaseUrl'), { max: 2 });
  });
  afterAll(() => sql.end());

  it('GET /health answers while dependencies are down', async () => {
    const app = await buildTestApp();
    const res = await app.inject('/health');
    expect(res.statusCode).toBe(200);
    expect(res.json().status).toBe('ok');
    await app.close();
  });

  it('GET /health/ready is 200 when PostgreSQL and Temporal answer', async () => {
    const config = testConfig({ TEMPORAL_ADDRESS: inject('temporalAddress') });
    const temporal = lazyTemporalClient(config);
    const app: FastifyInstance = await buildTestApp({ TEMPORAL_ADDRESS: inject('temporalAddress') }, { sql, temporal: temporal.get });
    try {
      const res = await app.inject('/health/ready');
      expect(res.json()).toEqual({ status: 'ready', checks: { postgres: { ok: true }, temporal: { ok: true } } });
    } finally {
      await app.close();
      await temporal.close();
    }
  });

  it('GET /health/ready answers from a status refreshed at most once a second: one PostgreSQL query and one Temporal call however many probes', async () => {
    const config = testConfig({ TEMPORAL_ADDRESS: inject('temporalAddress') });
    const temporal = lazyTemporalClient(config);
    // count the readiness queries and Temporal calls made by the real clients
    let selects = 0;
    let systemInfos = 0;
    const countingSql = new Proxy(sql, {
      apply(target, thisArg, args: unknown[]) {
        if (Array.isArray(args[0]) && args[0].join('') === 'select 1') selects++;
        return Reflect.apply(target, thisArg, args);
      },
    });
    const countingTemporal = async () => {
      const client = await temporal.get();
      const service = new Proxy(client.workflowService, {
        get(target, prop, receiver) {
          if (prop === 'getSystemInfo') systemInfos++;
          return Reflect.get(target, prop, receiver);
        },
      });
      return new Proxy(client, { get: (target, prop, receiver) => (prop === 'workflowService' ? service : Reflect.get(target, prop, receiver)) });
    };
    let now = Date.parse('2030-01-01T00:00:00Z');
    const app = await buildTestApp({ TEMPORAL_ADDRESS: inject('temporalAddress') }, { sql: countingSql, temporal: countingTemporal, now: () => new Date(now) });
    try {
      const first = await Promise.all(Array.from({ length: 20 }, () => app.inject('/health/ready')));
      for (let i = 0; i < 20; i++) first.push(await app.inject('/health/ready'));
      expect(first.map((r) => r.statusCode)).toEqual(Array(40).fill(200));
      expect([selects, systemInfos]).toEqual([1, 1]);
      now += 999;
      expect((await app.inject('/health/ready')).statusCode).toBe(200);
      expect([selects, systemInfos]).toEqual([1, 1]);
      now += 1; // one second after the first check: the next probe checks again, once
      await Promise.all(Array.from({ length: 10 }, () => app.inject('/health/ready')));
      expect([selects, systemInfos]).toEqual([2, 2]);
    } finally {
      await app.close();
      await temporal.close();
    }
  });

  it('GET /health/ready is 503 service_unavailable naming the failing dependency, never its raw error', async () => {
    const raw = 'connect ECONNREFUSED 10.1.2.3:7233 user=temporal-admin';
    const app = await buildTestApp({}, { sql, temporal: async () => Promise.reject(new Error(raw)) });
    try {
      const res = await app.inject('/health/ready');
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('service_unavailable');
      expect(res.json().hint).toContain('temporal');
      expect(res.json().hint).not.toContain('postgres');
      expect(res.body).not.toContain('ECONNREFUSED');
      expect(res.body).not.toContain('10.1.2.3');
    } finally {
      await app.close();
    }
  });

  it('GET /health and /health/ready are never rate-limited, even after the address used up its window', async () => {
    const app = await buildTestApp({ RATE_LIMIT_MAX: '3' }, { sql, temporal: async () => Promise.reject(new Error('down')) });
    try {
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await fetch(`${base}/catalog`)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      for (let i = 0; i < 5; i++) {
        const live = await fetch(`${base}/health`);
        expect(live.status).toBe(200);
        // Not counted, so no rate-limit headers either (decision: probes are outside the limiter).
        expect(live.headers.get('x-ratelimit-remaining')).toBeNull();
        expect((await fetch(`${base}/health/ready`)).status).toBe(503); // temporal down: 503, not 429
      }
      expect((await fetch(`${base}/catalog`)).status).toBe(429); // the window is still used up
    } finally {
      await app.close();
    }
  });
});
