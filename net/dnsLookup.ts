/**
 * The service's DNS lookups (trust scans, ownership checks): the system's resolvers, or the DNS
 * servers of TRUST_DNS_SERVERS through node:dns Resolver, so tests resolve their test domains on a
 * local DNS server.
 *   - hostLookup: a host's A/AAAA addresses, for "does not resolve" decisions and as
 *     net/safeFetch's `lookup` (so the addresses checked before a scan are the ones fetched from);
 *     without servers it is dns.lookup, as every other outbound fetch;
 *   - dnsResolver: a Resolver on the same servers for other record types (TXT of ownership proofs);
 *   - isDnsNotFound: whether a DNS error means "no such name / no record" rather than a failure.
 */
import dns from 'node:dns';

export type HostLookup = (host: string) => Promise<{ address: string; family: number }[]>;

export interface DnsOptions {
  /** deadline of one query try (default 2000 ms; 2 tries) */
  timeoutMs?: number;
}

/** DNS answers meaning "no such name / no address" (as opposed to a resolver failure). */
const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA', 'NXDOMAIN', 'NOTFOUND', 'NODATA']);

export function isDnsNotFound(err: unknown): boolean {
  return NOT_FOUND.has((err as NodeJS.ErrnoException | null)?.code ?? '');
}

export class HostNotFoundError extends Error {
  constructor(host: string) {
    super(`${host} does not resolve`);
    this.name = 'HostNotFoundError';
  }
}

/** A Resolver on `servers` (ip or ip:port), or on the system's resolvers when empty. */
export function dnsResolver(servers: readonly string[], opts: DnsOptions = {}): dns.promises.Resolver {
  const resolver = new dns.promises.Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: 2 });
  if (servers.length) resolver.setServers([...servers]);
  return resolver;
}

/** Resolves a host to all its addresses; throws HostNotFoundError when it has none. */
export function hostLookup(servers: readonly string[], opts: DnsOptions = {}): HostLookup {
  if (servers.length === 0) {
    return async (host) => {
      try {
        const all = await dns.promises.lookup(host, { all: true, verbatim: true });
        if (all.length === 0) throw new HostNotFoundError(host);
        return all;
      } catch (err) {
        if (isDnsNotFound(err)) throw new HostNotFoundError(host);
        throw err;
      }
    };
  }
  const resolver = dnsResolver(servers, opts);
  const query = async (rr: 'resolve4' | 'resolve6', host: string): Promise<string[]> => {
    try {
      return await resolver[rr](host);
    } catch (err) {
      if (isDnsNotFound(err)) return [];
      throw err;
    }
  };
  return async (host) => {
    const [v4, v6] = await Promise.all([query('resolve4', host), query('resolve6', host)]);
    const all = [...v4.map((address) => ({ address, family: 4 })), ...v6.map((address) => ({ address, family: 6 }))];
    if (all.length === 0) throw new HostNotFoundError(host);
    return all;
  };
}
