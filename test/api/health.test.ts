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

  it('GET /health/ready is 503 service_unavailable naming the failing dependency', async () => {
    const app = await buildTestApp({}, { sql, temporal: async () => Promise.reject(new Error('connection refused')) });
    try {
      const res = await app.inject('/health/ready');
      expect(res.statusCode).toBe(503);
      expect(res.json().code).toBe('service_unavailable');
      expect(res.json().hint).toContain('temporal: connection refused');
    } finally {
      await app.close();
    }
  });
});
