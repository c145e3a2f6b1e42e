// The local entry point of dev:cluster and test:cluster (scripts/lib/balancer.ts): requests spread over
// the instances; a request an instance refuses (it is down) goes to the other one, POSTs included, with
// the body intact; a request an instance received and then dropped answers 502 retryable and is not
// sent again; the client's address arrives in X-Forwarded-For.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startBalancer, type Balancer } from '../../scripts/lib/balancer.js';
import { freePort } from '../../scripts/lib/ports.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

interface Upstream {
  url: string;
  seen: { method: string; body: string; xff: string | undefined }[];
}

async function upstream(name: string, behaviour: 'answer' | 'drop' = 'answer'): Promise<Upstream> {
  const seen: Upstream['seen'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      seen.push({ method: req.method!, body, xff: req.headers['x-forwarded-for'] as string | undefined });
      if (behaviour === 'drop') return req.socket.destroy();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, body }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

async function balancer(upstreams: string[]): Promise<Balancer> {
  const b = await startBalancer({ port: 0, upstreams });
  closers.push(() => b.stop());
  return b;
}

const post = async (b: Balancer, body: string) => {
  const r = await fetch(`${b.url}/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: r.status, body: (await r.json()) as Record<string, unknown> };
};

describe('the local entry point', () => {
  it('spreads requests over the instances and passes the client address on', async () => {
    const [a, b] = [await upstream('a'), await upstream('b')];
    const lb = await balancer([a.url, b.url]);
    const names = [];
    for (let i = 0; i < 4; i++) names.push((await post(lb, `{"i":${i}}`)).body.name);
    expect(names.sort()).toEqual(['a', 'a', 'b', 'b']);
    expect(a.seen[0]!.xff).toBe('127.0.0.1');
  });

  it('sends a POST an instance refused (it is down) to the other one, body intact', async () => {
    const up = await upstream('up');
    const down = `http://127.0.0.1:${await freePort()}`; // nothing listens there
    const lb = await balancer([down, up.url]);
    for (let i = 0; i < 4; i++) {
      const r = await post(lb, `{"n":${i}}`);
      expect(r).toEqual({ status: 200, body: { name: 'up', body: `{"n":${i}}` } });
    }
    expect(up.seen.map((s) => s.body)).toEqual(['{"n":0}', '{"n":1}', '{"n":2}', '{"n":3}']);
    expect(lb.stats().redispatched).toBeGreaterThan(0);
  });

  it('answers 502 retryable for a request an instance received and dropped, and does not send it again', async () => {
    const dropper = await upstream('dropper', 'drop');
    const other = await upstream('other');
    const lb = await balancer([dropper.url, other.url]);
    const r = await post(lb, '{"pay":1}');
    expect(r.status).toBe(502);
    expect(r.body).toMatchObject({ code: 'service_unavailable', retryable: true });
    expect(dropper.seen).toHaveLength(1);
    expect(other.seen).toHaveLength(0);
  });

  it('answers 503 when no instance accepts connections', async () => {
    const lb = await balancer([`http://127.0.0.1:${await freePort()}`, `http://127.0.0.1:${await freePort()}`]);
    const r = await post(lb, '{}');
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ code: 'service_unavailable', retryable: true });
  });
});
