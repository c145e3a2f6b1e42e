// The entry point of dev:cluster and test:cluster: Debian's HAProxy on deploy/haproxy.cfg (the file
// docker-compose.yml mounts) rendered with local addresses (scripts/lib/haproxy.ts). Requests spread over
// the instances; a request an instance refuses (it is down) goes to the other one, POSTs included, with the
// body intact; a request an instance received and then dropped answers 502 in the error schema and is not
// sent again; with no instance accepting, 503 in the error schema; the client's address arrives in
// X-Forwarded-For; HAProxy serves its own metrics.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { startHaproxy, type Haproxy } from '../../scripts/lib/haproxy.js';
import { freePort } from '../../scripts/lib/ports.js';

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of closers.splice(0)) await c();
});

interface Upstream {
  port: number;
  seen: { method: string; body: string; xff: string | undefined }[];
}

/** an API stand-in: answers /health 200, and every other request as `behaviour` says */
async function upstream(name: string, behaviour: 'answer' | 'drop' = 'answer'): Promise<Upstream> {
  const seen: Upstream['seen'] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url === '/health') return void res.writeHead(200, { 'content-type': 'application/json' }).end('{"status":"ok"}');
      seen.push({ method: req.method!, body, xff: req.headers['x-forwarded-for'] as string | undefined });
      if (behaviour === 'drop') return req.socket.destroy();
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ name, body }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  closers.push(() => new Promise<void>((r) => (server.closeAllConnections(), server.close(() => r()))));
  return { port: (server.address() as AddressInfo).port, seen };
}

async function haproxy(apiPorts: number[]): Promise<Haproxy> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'haproxy-test-'));
  const h = await startHaproxy({ dir, entryPort: await freePort(), metricsPort: await freePort(), apiPorts });
  closers.push(async () => {
    await h.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return h;
}

const post = async (h: Haproxy, body: string) => {
  const r = await fetch(`${h.url}/x`, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: r.status, contentType: r.headers.get('content-type'), body: (await r.json()) as Record<string, unknown> };
};

describe('the entry point (HAProxy on deploy/haproxy.cfg)', () => {
  it('spreads requests over the instances, passes the client address on, and serves its metrics', { timeout: 300_000 }, async () => {
    const [a, b] = [await upstream('a'), await upstream('b')];
    const h = await haproxy([a.port, b.port]);
    const names = [];
    for (let i = 0; i < 4; i++) names.push((await post(h, `{"i":${i}}`)).body.name);
    expect(names.sort()).toEqual(['a', 'a', 'b', 'b']);
    expect(a.seen[0]!.xff).toBe('127.0.0.1');
    const stats = await h.stats();
    expect(stats.answered).toEqual({ 'api-1': 2, 'api-2': 2 });
    // (its exporter's own names do not all pass promtool's lint, e.g. haproxy_process_failed_resolutions: not ours to rename)
    expect(await (await fetch(h.metricsUrl)).text()).toMatch(/^haproxy_backend_active_servers\{proxy="apis"\} 2$/m);
  });

  it('sends a POST an instance refused (it is down) to the other one, body intact', { timeout: 120_000 }, async () => {
    const up = await upstream('up');
    const h = await haproxy([await freePort() /* nothing listens there */, up.port]);
    for (let i = 0; i < 4; i++) {
      const r = await post(h, `{"n":${i}}`);
      expect(r.status).toBe(200);
      expect(r.body).toEqual({ name: 'up', body: `{"n":${i}}` });
    }
    expect(up.seen.map((s) => s.body)).toEqual(['{"n":0}', '{"n":1}', '{"n":2}', '{"n":3}']);
    // refused and sent on, until the health check took the instance out of the rotation
    const stats = await h.stats();
    expect(stats.redispatched > 0 || !stats.serversUp['api-1'], JSON.stringify(stats)).toBe(true);
  });

  it('answers 502 in the error schema for a request an instance received and dropped, and does not send it again', { timeout: 120_000 }, async () => {
    const dropper = await upstream('dropper', 'drop');
    const other = await upstream('other');
    const h = await haproxy([dropper.port, other.port]);
    const r = await post(h, '{"pay":1}');
    expect(r.status).toBe(502);
    expect(r.contentType).toBe('application/json');
    expect(r.body).toMatchObject({ code: 'service_unavailable', retryable: true });
    expect(dropper.seen).toHaveLength(1);
    expect(other.seen).toHaveLength(0);
  });

  it('answers 503 in the error schema when no instance accepts connections', { timeout: 120_000 }, async () => {
    const h = await haproxy([await freePort(), await freePort()]);
    const r = await post(h, '{}');
    expect(r.status).toBe(503);
    expect(r.body).toMatchObject({ code: 'service_unavailable', retryable: true });
  });
});
