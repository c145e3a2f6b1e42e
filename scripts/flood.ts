/**
 * npm run flood: 10,000 requests against two API instances sharing Redis (issue 13, item 4).
 * One address sends half of them, FLOOD_OTHERS other addresses share the rest within their quota.
 * First the other addresses alone (baseline), then with the flood: prints what passed per address and
 * the p50/p99 latency of the other addresses' requests in both runs; exits 1 when any address got more
 * or fewer than its quota, or another address was limited.
 * Knobs: FLOOD_REQUESTS (10000), FLOOD_OTHERS (50), FLOOD_MAX (the quota, 200), FLOOD_CONCURRENCY (64),
 * REDIS_URL (redis://127.0.0.1:6379).
 */
import { countByAddress, flood, interleave, percentile, startFloodInstances } from '../test/reliability/flood.js';

const total = Number(process.env.FLOOD_REQUESTS ?? 10_000);
const othersCount = Number(process.env.FLOOD_OTHERS ?? 50);
const max = Number(process.env.FLOOD_MAX ?? 200);
const concurrency = Number(process.env.FLOOD_CONCURRENCY ?? 64);
const redisUrl = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379';

const hog = '203.0.113.7';
const others = Array.from({ length: othersCount }, (_, i) => `198.51.${100 + Math.floor(i / 250)}.${(i % 250) + 1}`);
const perOther = Math.min(max, Math.floor(total / 2 / othersCount));
const hogCount = total - perOther * othersCount;

async function run(label: string, withHog: boolean) {
  const api = await startFloodInstances({ redisUrl, max, windowMs: 600_000 }); // a window longer than the run
  try {
    await flood(api.urls, Array.from({ length: 400 }, () => ({ address: '192.0.2.250' })), concurrency); // warm-up (JIT, sockets), its own address
    const requests = interleave(hog, withHog ? hogCount : 0, others, perOther);
    const started = performance.now();
    const answers = await flood(api.urls, requests, concurrency);
    const seconds = (performance.now() - started) / 1000;
    const otherMs = answers.filter((a) => a.address !== hog).map((a) => a.ms);
    const counts = countByAddress(answers);
    console.log(
      `${label}: ${answers.length} requests in ${seconds.toFixed(1)} s (${Math.round(answers.length / seconds)} req/s); ` +
        `other addresses p50 ${percentile(otherMs, 50).toFixed(1)} ms, p99 ${percentile(otherMs, 99).toFixed(1)} ms`,
    );
    const violations: string[] = [];
    for (const o of others) {
      const c = counts.get(o) ?? {};
      if (c[200] !== perOther || Object.keys(c).length !== 1) violations.push(`${o}: ${JSON.stringify(c)} (expected ${perOther} x 200)`);
    }
    if (withHog) {
      const c = counts.get(hog) ?? {};
      console.log(`  ${hog} sent ${hogCount}: ${c[200] ?? 0} passed, ${c[429] ?? 0} answered 429 (quota ${max})`);
      if (c[200] !== max || c[429] !== hogCount - max) violations.push(`${hog}: ${JSON.stringify(c)} (expected ${max} x 200, ${hogCount - max} x 429)`);
      const bad429 = answers.filter((a) => a.status === 429 && (a.body.code !== 'rate_limit_exceeded' || a.headers.get('x-ratelimit-remaining') !== '0' || !a.headers.get('x-ratelimit-reset')));
      if (bad429.length) violations.push(`${bad429.length} 429 answers without the error body or headers`);
    }
    return violations;
  } finally {
    await api.close();
  }
}

const violations = [...(await run(`baseline (${othersCount} addresses x ${perOther})`, false)), ...(await run(`flood (+ ${hogCount} from one address)`, true))];
for (const v of violations) console.log(`VIOLATION ${v}`);
console.log(violations.length ? `${violations.length} violations` : 'exact: every address got exactly its quota');
process.exit(violations.length ? 1 : 0);
