import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { randomUUID } from 'node:crypto';
import { buildTestApp } from '../support/app.js';
import { isPortOpen } from '../../scripts/lib/ports.js';

async function hit(base: string, n: number) {
  const responses: Response[] = [];
  for (let i = 0; i < n; i++) responses.push(await fetch(`${base}/catalog`));
  return responses;
}

describe('rate limit: 60 requests / 60 s / IP', () => {
  let app: FastifyInstance;
  let base: string;
  beforeAll(async () => {
    app = await buildTestApp();
    base = await app.listen({ host: '127.0.0.1', port: 0 });
  });
  afterAll(() => app.close());

  it('the 61st request in a window gets 429 rate_limit_exceeded with the three headers', async () => {
    const before = Math.floor(Date.now() / 1000);
    const responses = await hit(base, 61);
    const first = responses[0];
    expect(first.status).toBe(200);
    expect(first.headers.get('x-ratelimit-limit')).toBe('60');
    expect(first.headers.get('x-ratelimit-remaining')).toBe('59');
    expect(responses[59].status).toBe(200);
    expect(responses[59].headers.get('x-ratelimit-remaining')).toBe('0');

    const last = responses[60];
    expect(last.status).toBe(429);
    const body = (await last.json()) as { code: string; retryable: boolean };
    expect(body.code).toBe('rate_limit_exceeded');
    expect(body.retryable).toBe(true);
    expect(last.headers.get('x-ratelimit-limit')).toBe('60');
    expect(last.headers.get('x-ratelimit-remaining')).toBe('0');
    const reset = Number(last.headers.get('x-ratelimit-reset'));
    // A Unix timestamp (seconds) within the next window, not a relative number of seconds.
    expect(reset).toBeGreaterThanOrEqual(before);
    expect(reset).toBeLessThanOrEqual(before + 62); // the window plus rounding up to whole seconds
  });
});

describe('rate limit with a Redis store shared by two API instances', async () => {
  const redisUp = await isPortOpen(6379);
  it.skipIf(!redisUp)('counts requests to either instance against one budget', async () => {
    const redis = new Redis('redis://127.0.0.1:6379', { keyPrefix: `test-${randomUUID()}-` });
    const a = await buildTestApp({ RATE_LIMIT_MAX: '5' }, { redis });
    const b = await buildTestApp({ RATE_LIMIT_MAX: '5' }, { redis });
    try {
      const baseA = await a.listen({ host: '127.0.0.1', port: 0 });
      const baseB = await b.listen({ host: '127.0.0.1', port: 0 });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${baseA}/catalog`)).status);
      for (let i = 0; i < 3; i++) statuses.push((await fetch(`${baseB}/catalog`)).status);
      expect(statuses).toEqual([200, 200, 200, 200, 200, 429]);
    } finally {
      await a.close();
      await b.close();
      redis.disconnect();
    }
  });
});

describe('rate limit when Redis fails', () => {
  it('each instance keeps limiting in its own memory: answers carry the headers, the quota holds, nothing 500s', async () => {
    // a Redis that never answers: a closed port, no offline queue, no retries
    const { freePort } = await import('../../scripts/lib/ports.js');
    const redis = new Redis({ host: '127.0.0.1', port: await freePort(), lazyConnect: true, enableOfflineQueue: false, maxRetriesPerRequest: 0, retryStrategy: () => null });
    redis.on('error', () => {});
    const app = await buildTestApp({ RATE_LIMIT_MAX: '3' }, { redis });
    try {
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      const answers = await hit(base, 4);
      expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 429]);
      expect(answers.map((r) => r.headers.get('x-ratelimit-remaining'))).toEqual(['2', '1', '0', '0']);
      expect(((await answers[3].json()) as { code: string }).code).toBe('rate_limit_exceeded');
    } finally {
      await app.close();
      redis.disconnect();
    }
  });
});
