/**
 * The Prometheus endpoint of a process (issue 30): GET /metrics on METRICS_HOST:METRICS_PORT (loopback
 * by default), a server of its own beside the API's, so the API's routes, rate limit and logs never see
 * a scrape and the metrics never reach the public port. Text exposition format 0.0.4, what Prometheus
 * and `promtool check metrics` read. `extra` appends another exposition (the worker: the Temporal SDK's
 * own metrics, worker/telemetry.ts), so one port serves everything a process exports.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { registry } from './metrics.js';

export interface MetricsServer {
  port: number;
  url: string;
  close(): Promise<void>;
}

export async function startMetricsServer(o: { host: string; port: number; extra?: () => Promise<string> }): Promise<MetricsServer> {
  const server = http.createServer((req, res) => {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' || path !== '/metrics') {
      res.writeHead(path === '/metrics' ? 405 : 404, { 'content-type': 'text/plain' }).end(path === '/metrics' ? 'GET only\n' : 'see /metrics\n');
      return;
    }
    void (async () => {
      try {
        const own = await registry.metrics();
        const extra = o.extra ? await o.extra().catch(() => '') : '';
        res.writeHead(200, { 'content-type': registry.contentType }).end(extra ? `${own.replace(/\n*$/, '\n')}${extra}` : own);
      } catch (err) {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(`metrics unavailable: ${(err as Error).message}\n`);
      }
    })();
  });
  server.keepAliveTimeout = 65_000; // longer than a scrape interval: one connection per scraper
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port, o.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  server.unref();
  const shownHost = o.host.includes(':') ? `[${o.host}]` : o.host;
  return {
    port,
    url: `http://${shownHost}:${port}/metrics`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
