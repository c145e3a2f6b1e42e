/**
 * A local OTLP/HTTP receiver for traces in the JSON encoding (OTEL_EXPORTER_OTLP_PROTOCOL=http/json):
 * POST /v1/traces with an ExportTraceServiceRequest, answered 200 {}. Keeps every span it receives,
 * flattened (service name, ids, name, attributes, events), for the trace tests and the bench's
 * "exporter on" runs. Loopback only.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

type AnyValue = { stringValue?: string; intValue?: string | number; doubleValue?: number; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value?: AnyValue };

export interface ReceivedSpan {
  service: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  kind: number;
  attributes: Record<string, unknown>;
  /** the events' names and attributes (exceptions recorded on a span are events) */
  events: { name: string; attributes: Record<string, unknown> }[];
  status: { code?: number; message?: string };
  /** the resource's attributes */
  resource: Record<string, unknown>;
}

export interface OtlpReceiver {
  /** the base URL to give as OTEL_EXPORTER_OTLP_ENDPOINT */
  url: string;
  spans: ReceivedSpan[];
  /** export requests received (and their total bytes) */
  requests(): { count: number; bytes: number };
  close(): Promise<void>;
}

function valueOf(v: AnyValue | undefined): unknown {
  if (!v) return undefined;
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.doubleValue !== undefined) return v.doubleValue;
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(valueOf);
  return undefined;
}

const attributesOf = (list: KeyValue[] | undefined): Record<string, unknown> => Object.fromEntries((list ?? []).map((kv) => [kv.key, valueOf(kv.value)]));

export async function startOtlpReceiver(o: { keep?: boolean } = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  let count = 0;
  let bytes = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      count++;
      const body = Buffer.concat(chunks);
      bytes += body.length;
      if (req.method !== 'POST' || req.url !== '/v1/traces') return void res.writeHead(404).end();
      if (o.keep !== false) {
        try {
          const parsed = JSON.parse(body.toString('utf8')) as {
            resourceSpans?: { resource?: { attributes?: KeyValue[] }; scopeSpans?: { spans?: Record<string, any>[] }[] }[];
          };
          for (const rs of parsed.resourceSpans ?? []) {
            const resource = attributesOf(rs.resource?.attributes);
            for (const ss of rs.scopeSpans ?? []) {
              for (const s of ss.spans ?? []) {
                spans.push({
                  service: String(resource['service.name'] ?? ''),
                  traceId: String(s.traceId ?? ''),
                  spanId: String(s.spanId ?? ''),
                  parentSpanId: String(s.parentSpanId ?? ''),
                  name: String(s.name ?? ''),
                  kind: Number(s.kind ?? 0),
                  attributes: attributesOf(s.attributes as KeyValue[]),
                  events: ((s.events ?? []) as { name: string; attributes?: KeyValue[] }[]).map((e) => ({ name: e.name, attributes: attributesOf(e.attributes) })),
                  status: (s.status ?? {}) as ReceivedSpan['status'],
                  resource,
                });
              }
            }
          }
        } catch {
          return void res.writeHead(400).end();
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    spans,
    requests: () => ({ count, bytes }),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
