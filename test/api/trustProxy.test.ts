/**
 * TRUST_PROXY (issue 20 item 3): with the proxies' addresses (or CIDR ranges), the client address is
 * the one the trusted proxy saw, whatever a client writes into X-Forwarded-For itself; so made-up
 * addresses buy no new rate-limit quota.
 */
import { describe, expect, it } from 'vitest';
import { buildTestApp } from '../support/app.js';

/** What a load balancer at 127.0.0.1 forwards: the client's own X-Forwarded-For, then the address it saw. */
async function throughProxy(base: string, claimed: string, seen: string): Promise<number> {
  const res = await fetch(`${base}/catalog`, { headers: { 'x-forwarded-for': `${claimed}, ${seen}` } });
  await res.arrayBuffer();
  return res.status;
}

describe('TRUST_PROXY', () => {
  it.each([
    ['the proxy address', '127.0.0.1'],
    ['the proxy CIDR ranges', '127.0.0.0/8,::1'],
  ])('with %s, a made-up X-Forwarded-For entry does not change the client address the limit counts', async (_name, setting) => {
    const app = await buildTestApp({ TRUST_PROXY: setting, RATE_LIMIT_MAX: '3' });
    try {
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push(await throughProxy(base, `198.51.100.${i + 1}`, '203.0.113.7'));
      expect(statuses).toEqual([200, 200, 200, 429]);
      // another client behind the same proxy has its own quota
      expect(await throughProxy(base, '198.51.100.1', '203.0.113.8')).toBe(200);
    } finally {
      await app.close();
    }
  });

  it('with the proxy addresses, a request from an address not listed is counted by its socket address', async () => {
    const app = await buildTestApp({ TRUST_PROXY: '10.0.0.0/8', RATE_LIMIT_MAX: '2' });
    try {
      const base = await app.listen({ host: '127.0.0.1', port: 0 });
      const statuses = [];
      for (let i = 0; i < 3; i++) statuses.push(await throughProxy(base, `198.51.100.${i + 1}`, `203.0.113.${i + 1}`));
      expect(statuses).toEqual([200, 200, 429]);
    } finally {
      await app.close();
    }
  });
});
