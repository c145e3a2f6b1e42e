/**
 * One check of a domain ownership challenge (DESIGN.md sections 6 and 10, "Ownership"): looks for
 * the challenge token in the DNS TXT record _agent-passport.{domain} and in the well-known file
 * https://{domain}/.well-known/agent-passport-challenge.txt. Used by POST
 * /api/trust/{domain}/verify-ownership (api/trust/ownership.ts) and by the domainOwnership
 * workflow's activity that still serves challenges handed out before issue 20.
 *
 * What counts as proof, `<value>` being what the challenge publishes (its token, or for a challenge
 * issued without a DID the token's digest: db/queries/domainOwnership.ts publishedValue):
 *   - DNS: a TXT record (its strings joined) equal to `agent-passport-verification=<value>`;
 *   - well-known: a 2xx answer whose first non-empty line, trimmed, is `<value>` or
 *     `agent-passport-verification=<value>`, fetched through net/safeFetch (the SSRF rules, the 5 s
 *     deadline, a 4 KB cap) following redirects on the same host only: a redirect to another host
 *     is not followed, so a file that another host serves never proves this one.
 * Both places are looked at; DNS wins when both hold.
 *
 * DNS goes through net/dnsLookup: the system's resolvers, or TRUST_DNS_SERVERS (tests: a local DNS
 * server), which also resolve the well-known fetch's host. `fetchOrigins` (TRUST_FETCH_ORIGINS,
 * tests only) sends a domain's fetch to a loopback origin.
 */
import { safeFetch, SafeFetchError } from './safeFetch.js';
import { dnsResolver, hostLookup, isDnsNotFound } from './dnsLookup.js';
import { OWNERSHIP_WELL_KNOWN_PATH, ownershipDnsName, ownershipTxtValue, type OwnershipMethod } from '../domain/domainName.js';

export interface OwnershipProbeDeps {
  /** DNS servers (ip or ip:port) for TXT and, when set, for the well-known fetch's host; default system */
  dnsServers?: string[];
  /** TRUST_ALLOW_PRIVATE: lift the public-address rule of the fetcher (tests) */
  allowPrivate?: boolean;
  /** domain -> origin override of its fetches (tests only; e.g. http://127.0.0.1:4321) */
  fetchOrigins?: Record<string, string>;
  /** deadline of each DNS query and fetch (default 5000 ms) */
  timeoutMs?: number;
}

export interface OwnershipProbeResult {
  /** the proof found, null when neither place holds the token */
  proven: { method: OwnershipMethod; proof: string } | null;
  /** what each place showed (for the 403's message and the Web UI) */
  detail: string;
}

/** The largest well-known file read (a token is under 100 bytes). */
const WELL_KNOWN_MAX_BYTES = 4 * 1024;

type Probe = { proof: string | null; detail: string };

/** A checker bound to its resolvers: `check(domain, value)` looks at both places once. */
export function ownershipProber(deps: OwnershipProbeDeps = {}) {
  const timeoutMs = deps.timeoutMs ?? 5_000;
  // 2 s per try, 2 tries: a check (DNS beside the fetch) stays within one request's wait
  const dnsOpts = { timeoutMs: Math.min(timeoutMs, 2_000) };
  const servers = deps.dnsServers ?? [];
  const resolver = dnsResolver(servers, dnsOpts);
  /** The fetcher's resolver: the configured DNS servers when set, else the system's (safeFetch default). */
  const lookup = servers.length ? hostLookup(servers, dnsOpts) : undefined;

  async function probeDns(domain: string, value: string): Promise<Probe> {
    const name = ownershipDnsName(domain);
    const expected = ownershipTxtValue(value);
    let records: string[][];
    try {
      records = await resolver.resolveTxt(name);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'error';
      return { proof: null, detail: `dns ${name}: ${isDnsNotFound(err) ? 'no TXT record' : code}` };
    }
    const values = records.map((chunks) => chunks.join(''));
    if (values.some((v) => v.trim() === expected)) return { proof: `dns:${name} TXT "${expected}"`, detail: `dns ${name}: token found` };
    return { proof: null, detail: `dns ${name}: ${values.length} TXT record(s), none with the token` };
  }

  async function probeWellKnown(domain: string, value: string): Promise<Probe> {
    const origin = deps.fetchOrigins?.[domain] ?? `https://${domain}`;
    const url = `${origin}${OWNERSHIP_WELL_KNOWN_PATH}`;
    const shown = `https://${domain}${OWNERSHIP_WELL_KNOWN_PATH}`;
    let res;
    try {
      res = await safeFetch(url, { timeoutMs, maxBytes: WELL_KNOWN_MAX_BYTES, accept: 'text/plain', allowPrivate: deps.allowPrivate, lookup, redirects: 'same-host' });
    } catch (err) {
      // one word for "no such name" and "not a public address": the answer does not tell which
      const reason = err instanceof SafeFetchError ? (err.reason === 'dns_failed' || err.reason === 'address_refused' ? 'not reachable at a public address' : err.reason) : 'fetch failed';
      return { proof: null, detail: `well-known ${shown}: ${reason}` };
    }
    if (res.status < 200 || res.status > 299) return { proof: null, detail: `well-known ${shown}: HTTP ${res.status}` };
    const firstLine = res.body.toString('utf8').split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? '';
    if (firstLine === value || firstLine === ownershipTxtValue(value)) return { proof: `well-known:${shown} "${firstLine}"`, detail: `well-known ${shown}: token found` };
    return { proof: null, detail: `well-known ${shown}: the file does not hold the token` };
  }

  return {
    /** Looks for `value` (the token, or the digest a challenge without a DID publishes) in both places. */
    async check(domain: string, value: string): Promise<OwnershipProbeResult> {
      const [dnsProbe, wkProbe] = await Promise.all([probeDns(domain, value), probeWellKnown(domain, value)]);
      const proven = dnsProbe.proof ? { method: 'dns' as const, proof: dnsProbe.proof } : wkProbe.proof ? { method: 'well-known' as const, proof: wkProbe.proof } : null;
      return { proven, detail: `${dnsProbe.detail}; ${wkProbe.detail}` };
    },
  };
}

export type OwnershipProber = ReturnType<typeof ownershipProber>;
