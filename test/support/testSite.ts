/**
 * A domain's web site on a loopback port for the trust tests (point TRUST_FETCH_ORIGINS at
 * `origin`): path -> file, set and changed while the test runs; a string is a 200 text/plain file;
 * anything else answers 404 "missing <path>"; a SiteFile may add headers (a redirect's location).
 * Counts the requests it answered.
 */
import http from 'node:http';

export interface SiteFile {
  status: number;
  type: string;
  body: string;
  /** more response headers (e.g. location of a redirect) */
  headers?: Record<string, string>;
}

export interface TestSite {
  origin: string;
  files: Map<string, SiteFile | string>;
  /** how many requests it answered */
  requests(): number;
  /** the body it serves at a path now */
  served(path: string): Buffer;
  close(): Promise<void>;
}

export async function startTestSite(): Promise<TestSite> {
  const files = new Map<string, SiteFile | string>();
  let requests = 0;
  const fileFor = (path: string): SiteFile => {
    const f = files.get(path);
    if (f === undefined) return { status: 404, type: 'text/plain', body: `missing ${path}` };
    return typeof f === 'string' ? { status: 200, type: 'text/plain', body: f } : f;
  };
  const server = http.createServer((req, res) => {
    requests++;
    const f = fileFor((req.url ?? '/').split('?')[0]!);
    res.writeHead(f.status, { ...f.headers, 'content-type': f.type }).end(f.body);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  return {
    origin: `http://127.0.0.1:${port}`,
    files,
    requests: () => requests,
    served: (path) => Buffer.from(fileFor(path).body),
    close: () =>
      new Promise<void>((r) => {
        server.closeAllConnections();
        server.close(() => r());
      }),
  };
}
