/**
 * The one outbound HTTP fetcher for URLs that clients give us (agent cards, trust checks, http
 * verifiers): DESIGN.md section 10 "Outbound fetches". Fetching someone else's URL from inside our
 * network is an SSRF risk, so every hop:
 *   - is http or https, without credentials in the URL, on any port;
 *   - resolves the host once and refuses it when ANY of its addresses is not public unicast
 *     (private, loopback, link-local, CGNAT, multicast, reserved, unspecified, IPv4-mapped IPv6,
 *     NAT64/6to4/Teredo and the other special ranges of ipaddr.js);
 *   - connects to the very address that was checked (the socket's lookup returns it), so a DNS
 *     answer that changes between check and connect (rebinding) cannot redirect the connection;
 *     TLS still verifies the certificate against the host name;
 *   - follows at most `maxRedirects` redirects, checking each new location the same way; with
 *     `redirects: 'same-host'` (ownership proofs) only to the same host name as the first URL's,
 *     so a file served by another host never counts for this one;
 * and the whole fetch has one deadline (default 5 s) and a body size cap (default 64 KB).
 * `allowPrivate` (TRUST_ALLOW_PRIVATE, tests only) lifts the address rule and nothing else;
 * `allowLoopback` (agents' cards and endpoints in development: config agentFetchOptions) admits
 * loopback addresses besides the public ones.
 *
 * Layering: net/ depends on node built-ins and ipaddr.js only, so api/, activities/ and scripts can
 * all use it.
 */
import dns from 'node:dns';
import http from 'node:http';
import https from 'node:https';
import net from 'node:net';
import ipaddr from 'ipaddr.js';

export interface SafeFetchOptions {
  /** deadline of the whole fetch, redirects included (default 5000 ms) */
  timeoutMs?: number;
  /** largest body accepted (default 64 KiB) */
  maxBytes?: number;
  /** redirects followed (default 3) */
  maxRedirects?: number;
  /** which redirects are followed: 'any' host (default) or only the 'same-host' as the URL asked for (refused: redirect_refused) */
  redirects?: 'any' | 'same-host';
  /** lift the address rule (tests against 127.0.0.1); never in production */
  allowPrivate?: boolean;
  /** admit loopback addresses (127.0.0.0/8, ::1) besides public ones: development only (config agentFetchOptions) */
  allowLoopback?: boolean;
  /** which addresses may be reached (default isPublicAddress; tests narrow it) */
  addressAllowed?: (address: string) => boolean;
  /** Accept header (default application/json) */
  accept?: string;
  /** POST this body (with `contentType`, default application/json) instead of a GET; a 303 redirect turns it into a GET */
  post?: { body: string | Buffer; contentType?: string };
  /** resolver, for tests (default dns.lookup with all addresses) */
  lookup?: (host: string) => Promise<{ address: string; family: number }[]>;
}

export interface SafeFetchResult {
  /** the URL that answered (after redirects) */
  url: string;
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** the address connected to */
  address: string;
}

export type SafeFetchFailure =
  | 'invalid_url'
  | 'address_refused'
  | 'dns_failed'
  | 'timeout'
  | 'too_large'
  | 'too_many_redirects'
  | 'redirect_refused'
  | 'network';

export class SafeFetchError extends Error {
  constructor(
    readonly reason: SafeFetchFailure,
    message: string,
  ) {
    super(message);
    this.name = 'SafeFetchError';
  }
}

export const SAFE_FETCH_DEFAULTS = { timeoutMs: 5_000, maxBytes: 64 * 1024, maxRedirects: 3 } as const;

/** True only for public unicast addresses (the sole range an outbound fetch may reach). */
export function isPublicAddress(address: string): boolean {
  if (!ipaddr.isValid(address)) return false;
  const parsed = ipaddr.parse(address);
  // IPv4-mapped IPv6 (::ffff:a.b.c.d) is refused outright, whatever the IPv4 inside.
  if (parsed.range() !== 'unicast') return false;
  // IPv6: global unicast 2000::/3 only. ipaddr.js calls the rest of ::/8 (the deprecated
  // IPv4-compatible ::a.b.c.d, e.g. ::127.0.0.1) and the old site-local fec0::/10 "unicast".
  return parsed.kind() === 'ipv4' || parsed.match(GLOBAL_UNICAST_V6);
}

const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/** 127.0.0.0/8 and ::1 (not IPv4-mapped forms). */
export function isLoopbackAddress(address: string): boolean {
  return ipaddr.isValid(address) && ipaddr.parse(address).range() === 'loopback';
}

async function defaultLookup(host: string): Promise<{ address: string; family: number }[]> {
  return dns.promises.lookup(host, { all: true, verbatim: true });
}

interface CheckedTarget {
  url: URL;
  host: string;
  address: string;
  family: 4 | 6;
}

async function checkTarget(raw: string | URL, opts: { allowed: (address: string) => boolean; lookup: (host: string) => Promise<{ address: string; family: number }[]> }): Promise<CheckedTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new SafeFetchError('invalid_url', 'not a valid URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SafeFetchError('invalid_url', `scheme ${url.protocol} is not http(s)`);
  if (url.username || url.password) throw new SafeFetchError('invalid_url', 'URLs with credentials are refused');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!host) throw new SafeFetchError('invalid_url', 'the URL has no host');
  let addresses: { address: string; family: number }[];
  if (net.isIP(host)) {
    addresses = [{ address: host, family: net.isIP(host) }];
  } else {
    try {
      addresses = await opts.lookup(host);
    } catch {
      throw new SafeFetchError('dns_failed', `${host} does not resolve`);
    }
    if (addresses.length === 0) throw new SafeFetchError('dns_failed', `${host} does not resolve`);
  }
  const refused = addresses.find((a) => !opts.allowed(a.address));
  if (refused) throw new SafeFetchError('address_refused', `${host} resolves to a non-public address`);
  const first = addresses[0]!;
  return { url, host, address: first.address, family: first.family === 6 ? 6 : 4 };
}

function requestOnce(target: CheckedTarget, opts: { accept: string; maxBytes: number; signal: AbortSignal; post?: { body: string | Buffer; contentType?: string } }): Promise<{ status: number; headers: http.IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    const mod = target.url.protocol === 'https:' ? https : http;
    // The socket connects to the address that was checked, never to a fresh DNS answer.
    const lookup = (_host: string, options: { all?: boolean }, cb: (...args: unknown[]) => void) => {
      if (options?.all) cb(null, [{ address: target.address, family: target.family }]);
      else cb(null, target.address, target.family);
    };
    const req = mod.request(
      target.url,
      {
        method: opts.post ? 'POST' : 'GET',
        headers: {
          accept: opts.accept,
          'user-agent': 'agent-passport/1 (+safe-fetch)',
          'accept-encoding': 'identity',
          ...(opts.post ? { 'content-type': opts.post.contentType ?? 'application/json', 'content-length': String(Buffer.byteLength(opts.post.body)) } : {}),
        },
        lookup: lookup as never,
        signal: opts.signal,
        agent: false,
      },
      (res) => {
        const declared = Number(res.headers['content-length']);
        if (Number.isFinite(declared) && declared > opts.maxBytes) {
          res.destroy();
          reject(new SafeFetchError('too_large', `the body is over ${opts.maxBytes} bytes`));
          return;
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > opts.maxBytes) {
            res.destroy();
            reject(new SafeFetchError('too_large', `the body is over ${opts.maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', (err) => reject(err));
      },
    );
    req.on('error', (err) => reject(err));
    req.end(opts.post?.body);
  });
}

const REDIRECTS = new Set([301, 302, 303, 307, 308]);

/** A URL's host name as checkTarget compares it: no IPv6 brackets, lower case (the URL parser already lower-cases names). */
function hostOf(url: URL): string {
  const h = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return h.toLowerCase();
}

/** GETs (or POSTs to) a client-supplied URL under the SSRF rules above; non-2xx answers are returned, not thrown. */
export async function safeFetch(rawUrl: string, options: SafeFetchOptions = {}): Promise<SafeFetchResult> {
  const timeoutMs = options.timeoutMs ?? SAFE_FETCH_DEFAULTS.timeoutMs;
  const maxBytes = options.maxBytes ?? SAFE_FETCH_DEFAULTS.maxBytes;
  const maxRedirects = options.maxRedirects ?? SAFE_FETCH_DEFAULTS.maxRedirects;
  const publicOnly = options.addressAllowed ?? isPublicAddress;
  const allowed = options.allowPrivate ? () => true : options.allowLoopback ? (a: string) => publicOnly(a) || isLoopbackAddress(a) : publicOnly;
  const check = { allowed, lookup: options.lookup ?? defaultLookup };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const deadline = new Promise<never>((_, reject) => {
    controller.signal.addEventListener('abort', () => reject(new SafeFetchError('timeout', `no complete answer within ${timeoutMs} ms`)), { once: true });
  });
  deadline.catch(() => undefined);
  try {
    let current: string | URL = rawUrl;
    let firstHost: string | undefined;
    let post = options.post;
    for (let hop = 0; ; hop++) {
      const target: CheckedTarget = await Promise.race([checkTarget(current, check), deadline]);
      firstHost ??= target.host.toLowerCase();
      let res: { status: number; headers: http.IncomingHttpHeaders; body: Buffer };
      try {
        res = await Promise.race([requestOnce(target, { accept: options.accept ?? 'application/json', maxBytes, signal: controller.signal, post }), deadline]);
      } catch (err) {
        if (err instanceof SafeFetchError) throw err;
        if (controller.signal.aborted) throw new SafeFetchError('timeout', `no complete answer within ${timeoutMs} ms`);
        throw new SafeFetchError('network', `${target.host}: ${(err as NodeJS.ErrnoException).code ?? 'connection failed'}`);
      }
      const location: string | undefined = res.headers.location;
      if (REDIRECTS.has(res.status) && location) {
        if (hop >= maxRedirects) throw new SafeFetchError('too_many_redirects', `more than ${maxRedirects} redirects`);
        let next: URL;
        try {
          next = new URL(location, target.url);
        } catch {
          throw new SafeFetchError('invalid_url', 'the redirect location is not a valid URL');
        }
        if (options.redirects === 'same-host' && hostOf(next) !== firstHost) {
          throw new SafeFetchError('redirect_refused', `a redirect to another host (${next.hostname.slice(0, 64)}) is not followed`);
        }
        current = next;
        if (res.status === 303) post = undefined;
        continue;
      }
      return { url: target.url.toString(), status: res.status, headers: res.headers, body: res.body, address: target.address };
    }
  } finally {
    clearTimeout(timer);
  }
}
