/**
 * Host-name resolution of the trust scans: the system resolver (dns.lookup, as every other
 * outbound fetch), or the DNS servers of TRUST_DNS_SERVERS through node:dns Resolver (A and AAAA
 * queries), so tests resolve their test domains on a local DNS server. The same function decides
 * "does not resolve" (404) and feeds net/safeFetch's `lookup`, so the addresses checked before the
 * scan are the ones the fetches connect to.
 */
import dns from 'node:dns';

export type HostLookup = (host: string) => Promise<{ address: string; family: number }[]>;

/** DNS answers meaning "no such name / no address" (as opposed to a resolver failure). */
const NOT_FOUND = new Set(['ENOTFOUND', 'ENODATA', 'EAI_NONAME', 'EAI_NODATA', 'NXDOMAIN', 'NOTFOUND', 'NODATA']);

export class HostNotFoundError extends Error {
  constructor(host: string) {
    super(`${host} does not resolve`);
    this.name = 'HostNotFoundError';
  }
}

/** Resolves a host to all its addresses; throws HostNotFoundError when it has none. */
export function hostLookup(servers: readonly string[]): HostLookup {
  if (servers.length === 0) {
    return async (host) => {
      try {
        const all = await dns.promises.lookup(host, { all: true, verbatim: true });
        if (all.length === 0) throw new HostNotFoundError(host);
        return all;
      } catch (err) {
        if (NOT_FOUND.has((err as NodeJS.ErrnoException).code ?? '')) throw new HostNotFoundError(host);
        throw err;
      }
    };
  }
  const resolver = new dns.promises.Resolver({ timeout: 2_000, tries: 2 });
  resolver.setServers([...servers]);
  const query = async (rr: 'resolve4' | 'resolve6', host: string): Promise<string[]> => {
    try {
      return await resolver[rr](host);
    } catch (err) {
      if (NOT_FOUND.has((err as NodeJS.ErrnoException).code ?? '')) return [];
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
