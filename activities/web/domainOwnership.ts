/**
 * Activities of the domainOwnership workflow (DESIGN.md sections 6 and 10, "Ownership"): look for
 * the challenge token in the DNS TXT record _agent-passport.{domain} and in the well-known file
 * https://{domain}/.well-known/agent-passport-challenge.txt, and record each check in
 * domain_challenges (a proof found marks the challenge verified, once).
 *
 * What counts as proof:
 *   - DNS: a TXT record (its strings joined) equal to `agent-passport-verification=<token>`;
 *   - well-known: the file's first non-empty line, trimmed, equal to `<token>` or to
 *     `agent-passport-verification=<token>` (a 2xx answer; fetched through net/safeFetch, so the
 *     SSRF rules, the 5 s deadline and a 4 KB cap apply).
 * Both places are looked at on every check; DNS wins when both hold.
 *
 * DNS goes through net/dnsLookup: the system's resolvers by default, TRUST_DNS_SERVERS when
 * set (tests point it at a local DNS server). With TRUST_DNS_SERVERS the well-known fetch resolves
 * the host through the same servers (hostLookup, as the trust scans), so a test domain can name 127.0.0.1 (with
 * TRUST_ALLOW_PRIVATE). TRUST_FETCH_ORIGINS (tests only) sends a domain's fetches to a loopback
 * origin such as http://127.0.0.1:port.
 */
import type { Sql } from 'postgres';
import { ApplicationFailure } from '@temporalio/activity';
import { safeFetch, SafeFetchError } from '../../net/safeFetch.js';
import { dnsResolver, hostLookup, isDnsNotFound } from '../../net/dnsLookup.js';
import { OWNERSHIP_WELL_KNOWN_PATH, ownershipDnsName, ownershipTxtValue } from '../../domain/domainName.js';
import { expireChallenge, ownershipOf, recordChallengeCheck, type DomainOwnership, type OwnershipMethod } from '../../db/queries/domainOwnership.js';

export interface DomainOwnershipActivityDeps {
  sql: Sql;
  /** DNS servers (ip or ip:port) for TXT and, when set, for the well-known fetch's host; default system */
  dnsServers?: string[];
  /** TRUST_ALLOW_PRIVATE: lift the public-address rule of the fetcher (tests) */
  allowPrivate?: boolean;
  /** domain -> origin override of its fetches (tests only; e.g. http://127.0.0.1:4321) */
  fetchOrigins?: Record<string, string>;
  /** deadline of each DNS query and fetch (default 5000 ms) */
  timeoutMs?: number;
}

export interface OwnershipCheckInput {
  domain: string;
  token: string;
}

export interface OwnershipCheckResult {
  /** the challenge's state after this check */
  status: 'pending' | 'verified' | 'expired';
  /** the snapshot's domain_ownership object as it now stands */
  ownership: DomainOwnership;
  /** what each place showed (for the Web UI and the 403's hint) */
  detail: string;
}

/** The largest well-known file read (a token is under 100 bytes). */
const WELL_KNOWN_MAX_BYTES = 4 * 1024;

type Probe = { proof: string | null; detail: string };

export function createDomainOwnershipActivities(deps: DomainOwnershipActivityDeps) {
  const { sql } = deps;
  const timeoutMs = deps.timeoutMs ?? 5_000;
  // 2 s per try, 2 tries: a check (DNS beside the fetch) stays well inside verify-ownership's wait
  const dnsOpts = { timeoutMs: Math.min(timeoutMs, 2_000) };
  const servers = deps.dnsServers ?? [];
  const resolver = dnsResolver(servers, dnsOpts);

  async function probeDns(domain: string, token: string): Promise<Probe> {
    const name = ownershipDnsName(domain);
    const expected = ownershipTxtValue(token);
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

  /** The fetcher's resolver: the configured DNS servers when set, else the system's (safeFetch default). */
  const lookup = servers.length ? hostLookup(servers, dnsOpts) : undefined;

  async function probeWellKnown(domain: string, token: string): Promise<Probe> {
    const origin = deps.fetchOrigins?.[domain] ?? `https://${domain}`;
    const url = `${origin}${OWNERSHIP_WELL_KNOWN_PATH}`;
    const shown = `https://${domain}${OWNERSHIP_WELL_KNOWN_PATH}`;
    let res;
    try {
      res = await safeFetch(url, { timeoutMs, maxBytes: WELL_KNOWN_MAX_BYTES, accept: 'text/plain', allowPrivate: deps.allowPrivate, lookup });
    } catch (err) {
      return { proof: null, detail: `well-known ${shown}: ${err instanceof SafeFetchError ? err.reason : 'fetch failed'}` };
    }
    if (res.status < 200 || res.status > 299) return { proof: null, detail: `well-known ${shown}: HTTP ${res.status}` };
    const firstLine = res.body.toString('utf8').split(/\r?\n/).map((l) => l.trim()).find((l) => l.length > 0) ?? '';
    if (firstLine === token || firstLine === ownershipTxtValue(token)) return { proof: `well-known:${shown} "${firstLine}"`, detail: `well-known ${shown}: token found` };
    return { proof: null, detail: `well-known ${shown}: the file does not hold the token` };
  }

  /**
   * One check of a challenge: DNS and the well-known file, then the outcome recorded (idempotent:
   * a challenge already verified or expired stays as it is and is returned as such).
   */
  async function checkDomainOwnership(input: OwnershipCheckInput): Promise<OwnershipCheckResult> {
    const [dnsProbe, wkProbe] = await Promise.all([probeDns(input.domain, input.token), probeWellKnown(input.domain, input.token)]);
    const proven: { method: OwnershipMethod; proof: string } | null = dnsProbe.proof
      ? { method: 'dns', proof: dnsProbe.proof }
      : wkProbe.proof
        ? { method: 'well-known', proof: wkProbe.proof }
        : null;
    const detail = `${dnsProbe.detail}; ${wkProbe.detail}`;
    const row = await recordChallengeCheck(sql, input.token, { proven, result: detail });
    if (!row) throw ApplicationFailure.nonRetryable(`challenge ${input.token} of ${input.domain} does not exist`, 'ChallengeNotFound');
    return { status: row.status, ownership: ownershipOf(row), detail };
  }

  /** Marks the challenge expired unless a check proved it first; returns its final state. */
  async function expireDomainChallenge(input: OwnershipCheckInput): Promise<OwnershipCheckResult> {
    const row = await expireChallenge(sql, input.token);
    if (!row) throw ApplicationFailure.nonRetryable(`challenge ${input.token} of ${input.domain} does not exist`, 'ChallengeNotFound');
    return { status: row.status, ownership: ownershipOf(row), detail: row.last_result ?? 'never checked' };
  }

  return { checkDomainOwnership, expireDomainChallenge };
}

export type DomainOwnershipActivities = ReturnType<typeof createDomainOwnershipActivities>;
