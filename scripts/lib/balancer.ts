/**
 * The one local entry point of `npm run dev:cluster` and `npm run test:cluster`: a small HTTP reverse
 * proxy (node:http, no extra install) that spreads requests round-robin over the API instances, the
 * way a load balancer in front of them does in production (docker-compose.yml uses HAProxy).
 *
 * - A request whose upstream refuses the connection (an API that is down or restarting) is sent to the
 *   next instance: the API never saw it, so even a POST is safe to send again (HAProxy's
 *   `retry-on conn-failure` with `option redispatch`). An instance that refused is skipped for a second.
 * - A request an instance received and then dropped (it died mid-request) answers 502 in the error
 *   schema with retryable: true: only the client knows whether it may repeat it (x402 clients do).
 * - X-Forwarded-For / -Proto / -Host are set as a proxy does, so the APIs (TRUST_PROXY=1) see the
 *   client's address for rate limits.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Balancer {
  url: string;
  port: number;
  /** requests answered by each upstream (by its URL) and sent on after a refused connection */
  stats(): { answered: Record<string, number>; redispatched: number; failed: number };
  stop(): Promise<void>;
}

const MAX_BODY = 16 * 1024 * 1024;
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade']);

function errorBody(res: http.ServerResponse, status: number, code: string, error: string): void {
  if (res.headersSent) return void res.destroy();
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ error, code, retryable: true }));
}

export async function startBalancer(o: { port: number; upstreams: string[]; host?: string; log?: (line: string) => void }): Promise<Balancer> {
  const upstreams = o.upstreams.map((u) => new URL(u));
  const downUntil = new Map<string, number>();
  const answered: Record<string, number> = Object.fromEntries(o.upstreams.map((u) => [new URL(u).origin, 0]));
  let redispatched = 0;
  let failed = 0;
  let next = 0;

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > MAX_BODY) {
        errorBody(res, 413, 'payload_too_large', 'request body too large for the local entry point');
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      const headers: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(req.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) headers[k] = v;
      const client = req.socket.remoteAddress ?? '';
      headers['x-forwarded-for'] = req.headers['x-forwarded-for'] ? `${req.headers['x-forwarded-for']}, ${client}` : client;
      headers['x-forwarded-proto'] = 'http';
      headers['x-forwarded-host'] = req.headers.host ?? '';
      headers['content-length'] = String(body.length);
      // one try per upstream, starting at the next in turn; instances refusing lately go last
      const start = next++ % upstreams.length;
      const order = upstreams.map((_, i) => upstreams[(start + i) % upstreams.length]!);
      const now = Date.now();
      order.sort((a, b) => Number((downUntil.get(a.origin) ?? 0) > now) - Number((downUntil.get(b.origin) ?? 0) > now));
      const attempt = (i: number) => {
        const target = order[i];
        if (!target) {
          failed++;
          return errorBody(res, 503, 'service_unavailable', 'no API instance is accepting connections');
        }
        const up = http.request(
          { host: target.hostname, port: target.port, method: req.method, path: req.url, headers },
          (upRes) => {
            answered[target.origin] = (answered[target.origin] ?? 0) + 1;
            const out: http.OutgoingHttpHeaders = {};
            for (const [k, v] of Object.entries(upRes.headers)) if (!HOP_BY_HOP.has(k) && v !== undefined) out[k] = v;
            res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, out);
            upRes.pipe(res);
            upRes.on('error', () => res.destroy());
          },
        );
        let connected = false;
        up.on('socket', (s) => {
          if (!s.connecting) connected = true;
          else s.once('connect', () => (connected = true));
        });
        up.on('error', (err: NodeJS.ErrnoException) => {
          if (!connected && (err.code === 'ECONNREFUSED' || err.code === 'EHOSTUNREACH' || err.code === 'ECONNRESET')) {
            // the instance never received this request: another one may take it
            downUntil.set(target.origin, Date.now() + 1_000);
            redispatched++;
            return attempt(i + 1);
          }
          failed++;
          o.log?.(`${req.method} ${req.url}: ${target.origin} dropped the request (${err.code ?? err.message})`);
          errorBody(res, 502, 'service_unavailable', 'the API instance handling this request went away; repeat it if it is safe to');
        });
        res.on('close', () => {
          if (!res.writableFinished) up.destroy();
        });
        up.end(body);
      };
      attempt(0);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    stats: () => ({ answered: { ...answered }, redispatched, failed }),
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
