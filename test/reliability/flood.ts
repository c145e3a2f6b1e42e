/**
 * The flood (issue 13, item 4): requests from one "hog" address and from many others, spread over two
 * API instances that share their rate-limit counters in Redis. Used by test/reliability/flood.test.ts
 * (small numbers) and scripts/flood.ts (10,000 requests, latency percentiles printed).
 * Addresses are given with X-Forwarded-For; the instances run as behind a proxy at 127.0.0.1
 * (TRUST_PROXY=127.0.0.1, the form production accepts: TRUST_PROXY=true is refused there), which is
 * where the requests come from. test/reliability/abuseFlood.test.ts uses real source addresses instead.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { Redis } from 'ioredis';
import { buildApp } from '../../api/app.js';
import { loadConfig } from '../../config/index.js';

export interface FloodInstances {
  urls: string[];
  close(): Promise<void>;
}

/** Two API instances (no database: /catalog needs none) sharing one Redis namespace of their own. */
export async function startFloodInstances(opts: { redisUrl: string; max: number; windowMs: number; trustProxy?: string | false }): Promise<FloodInstances> {
  const redis = new Redis(opts.redisUrl, { keyPrefix: `flood-${randomUUID()}-`, maxRetriesPerRequest: 2 });
  // the proxy in front: the flood's own sockets (127.0.0.1); false: no proxy, the socket is the client
  const env = { NODE_ENV: 'test', LOG_LEVEL: 'silent', RATE_LIMIT_MAX: String(opts.max), RATE_LIMIT_WINDOW_MS: String(opts.windowMs), TRUST_PROXY: String(opts.trustProxy ?? '127.0.0.1') };
  const apps: FastifyInstance[] = [];
  for (let i = 0; i < 2; i++) apps.push(await buildApp({ config: loadConfig(env), redis }, { logger: false }));
  const urls = await Promise.all(apps.map((a) => a.listen({ host: '127.0.0.1', port: 0 })));
  return {
    urls,
    async close() {
      for (const a of apps) await a.close();
      redis.disconnect();
    },
  };
}

export interface FloodRequest {
  address: string;
}
export interface FloodAnswer {
  address: string;
  status: number;
  ms: number;
  headers: Headers;
  body: Record<string, unknown>;
}

/**
 * Sends every request (GET /catalog with X-Forwarded-For = its address), alternating between the
 * instances, `concurrency` at a time, in the order given.
 */
export async function flood(urls: string[], requests: FloodRequest[], concurrency: number, path = '/catalog'): Promise<FloodAnswer[]> {
  const answers: FloodAnswer[] = new Array(requests.length);
  let next = 0;
  const lane = async () => {
    for (;;) {
      const i = next++;
      if (i >= requests.length) return;
      const { address } = requests[i];
      const started = performance.now();
      const res = await fetch(`${urls[i % urls.length]}${path}`, { headers: { 'x-forwarded-for': address } });
      const body = (await res.json()) as Record<string, unknown>;
      answers[i] = { address, status: res.status, ms: performance.now() - started, headers: res.headers, body };
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, concurrency) }, lane));
  return answers;
}

/** The hog's requests interleaved with every other address's (round robin), so both compete all along. */
export function interleave(hog: string, hogCount: number, others: string[], perOther: number): FloodRequest[] {
  const out: FloodRequest[] = [];
  const otherTotal = others.length * perOther;
  const total = hogCount + otherTotal;
  let h = 0;
  let o = 0;
  for (let i = 0; i < total; i++) {
    // spread the hog evenly among the others
    const hogDue = Math.floor(((i + 1) * hogCount) / total) > h;
    if ((hogDue && h < hogCount) || o >= otherTotal) {
      out.push({ address: hog });
      h++;
    } else {
      out.push({ address: others[o % others.length] });
      o++;
    }
  }
  return out;
}

export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}

/** Per address: how many answers had each status. */
export function countByAddress(answers: FloodAnswer[]): Map<string, Record<number, number>> {
  const out = new Map<string, Record<number, number>>();
  for (const a of answers) {
    const c = out.get(a.address) ?? {};
    c[a.status] = (c[a.status] ?? 0) + 1;
    out.set(a.address, c);
  }
  return out;
}
