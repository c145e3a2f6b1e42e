/**
 * Trust snapshot generation (GET /api/trust/{domain}; attest, issue 11 part 2, signs the same
 * object): SPEC section 2 "Trust snapshot", DESIGN.md sections 6 and 10.
 *
 *  0. the domain is validated (domain/domainName.ts: 400 trust_domain_invalid);
 *  1. a scan (not a cached snapshot) is admitted by the caller's `admitScan` (GET and attest, api/trust/scanQuota.ts)
 *     in two steps around the name's resolution: the caller's own quota (per address per day) before it,
 *     so a refused caller makes no lookup; the name resolved (404 trust_domain_not_found when it has
 *     no address, or only non-public ones, with one message for both, api/trust/domainResolves.ts;
 *     503 trust_snapshot_failed when the resolver fails); then the site's quota (per registrable
 *     domain per hour, all callers), so only names that resolve count against a site (issue 26 item 8:
 *     made-up subdomains cannot use up a real site's scans);
 *  2. every probe of the rule catalog is fetched once, in parallel, through net/safeFetch (the
 *     SSRF guard: public addresses only, the checked address connected to, redirects re-checked),
 *     each within the scan's time budget (TRUST_CHECK_BUDGET_MS) and a 256 KiB cap;
 *  3. the rules are evaluated, evidence hashed, the Merkle root and score computed
 *     (domain/trust/), domain_ownership read from PostgreSQL (db/queries/domainOwnership.ts);
 *  4. snapshot_hash over the RFC 8785 JSON without integrity/on_chain, Ed25519-signed
 *     (api/trust/signingKey.ts);
 *  5. on_chain added when that snapshot_hash has a confirmed attestation (trust_attestations,
 *     POST /api/trust/{domain}/attest), so GET shows what attest answered.
 *
 * Cache (decision): per process, in memory, per domain, for TRUST_SNAPSHOT_TTL_MS. A snapshot is a
 * signed, self-verifying document, so two instances holding different (both valid) snapshots of a
 * domain for a few minutes is harmless. Ownership is re-read on every request (one indexed query):
 * when it differs from the cached snapshot's, the snapshot is re-assembled and re-signed from the
 * cached scan, so a proven ownership shows at once on every instance without a rescan.
 * Concurrent requests for a domain share one generation (scan, assembly, signature: single-flight
 * per domain), so they get the same snapshot and snapshot_hash. The attestation of the served hash
 * is read on each request until it is confirmed, then kept with the cached snapshot (a confirmed
 * attestation does not change).
 */
import type { FastifyInstance } from 'fastify';
import type { Sql } from 'postgres';
import { ApiError, echo } from '../errors.js';
import type { AppContext } from '../context.js';
import { trustDnsServers, trustFetchOrigins, type Config } from '../../config/index.js';
import { parseDomainName } from '../../domain/domainName.js';
import { canonicalJson } from '../../domain/trust/canonical.js';
import { merkleRoot } from '../../domain/trust/merkle.js';
import { evaluateRules, PROBE_IDS, PROBES, PROFILE_VERSION, type ProbeId, type ProbeOutcome, type RuleResultKind } from '../../domain/trust/rules.js';
import { evidenceHash, PROFILE_HASH, scoreSummary, SIGNATURE_ALGORITHM, snapshotHash, SNAPSHOT_VERSION, SPEC_VERSION, type ScoreSummary } from '../../domain/trust/snapshot.js';
import { findDomainOwnership, type DomainOwnership } from '../../db/queries/domainOwnership.js';
import { findAttestation, onChainOf, type OnChainAttestation } from '../../db/queries/trustAttestations.js';
import { safeFetch, SafeFetchError } from '../../net/safeFetch.js';
import { hostLookup, type HostLookup } from '../../net/dnsLookup.js';
import { requirePublicDomain } from './domainResolves.js';
import { makeTrustSigner, type TrustSigner } from './signingKey.js';

/** Largest body a probe reads (an OpenAPI document can be large; the cap is still small). */
export const PROBE_MAX_BYTES = 256 * 1024;
/** Most domains kept in the cache; the oldest go first. */
const CACHE_MAX_DOMAINS = 1_000;

/** SPEC domain_ownership before any challenge (also what part 2's table gives when empty). */
export const OWNERSHIP_NONE: DomainOwnership = { method: 'none', verified: false, verified_at: null, challenge_token: '', proof: '' };

export interface RuleResultEntry {
  id: string;
  result: RuleResultKind;
  detail: string;
  evidence_hash: string;
}

export interface TrustSnapshot {
  snapshot_version: string;
  spec_version: string;
  domain: string;
  generated_at: string;
  profile_ref: { profile_version: string; profile_hash: string; endpoint: string };
  evidence_root: { assertion_count: number; evidence_hashes: string[]; merkle_root: string; computed_at: string };
  score_summary: ScoreSummary;
  rule_results: RuleResultEntry[];
  domain_ownership: DomainOwnership;
  integrity: { snapshot_hash: string; signature_algorithm: string; signature: string; public_key: string; key_id: string };
  on_chain?: OnChainAttestation;
  _links: Record<string, { href: string; method?: 'GET' | 'POST' }>;
}

/** What a scan found: everything of the snapshot except ownership, times of assembly and signature. */
interface Scan {
  domain: string;
  computedAt: string;
  evidenceHashes: string[];
  merkleRoot: string;
  score: ScoreSummary;
  ruleResults: RuleResultEntry[];
}

interface CacheEntry {
  scan: Scan;
  snapshot: TrustSnapshot;
  /** canonical JSON of the ownership the snapshot carries */
  ownershipKey: string;
  expiresAt: number;
  /** the confirmed attestation of snapshot's hash, once seen */
  onChain?: OnChainAttestation;
}

export interface TrustSnapshotDeps {
  config: Config;
  sql?: Sql;
  /** clock (tests) */
  now?: () => Date;
}

/**
 * What admits a new scan, in two steps around the name's resolution (api/trust/scanQuota.ts): each
 * may throw its refusal (429).
 */
export interface ScanAdmission {
  /** the caller's own quota, before anything is looked up */
  caller(domain: string): Promise<void>;
  /** the site's quota, once the name resolved to public addresses */
  site(domain: string): Promise<void>;
}

/** A generation's own caller was refused a scan (its quota): callers who joined it try again under their own. */
class AdmissionRefused extends Error {
  constructor(readonly refusal: unknown) {
    super('scan not admitted');
  }
}

export class TrustSnapshots {
  private readonly cache = new Map<string, CacheEntry>();
  /** generations under way, per domain (single-flight) */
  private readonly generations = new Map<string, Promise<CacheEntry>>();
  private readonly lookup: HostLookup;
  private readonly origins: Record<string, string>;
  readonly signer: TrustSigner;
  private readonly now: () => Date;

  constructor(private readonly deps: TrustSnapshotDeps) {
    this.lookup = hostLookup(trustDnsServers(deps.config));
    this.origins = trustFetchOrigins(deps.config);
    this.signer = makeTrustSigner(deps.config);
    this.now = deps.now ?? (() => new Date());
  }

  /**
   * The current snapshot of a domain (as given by the client: validated and normalised here).
   * `fresh: true` ignores a cached scan (but joins a generation under way). `admitScan` is awaited
   * before a new scan is started (not for a cached snapshot nor to join a scan under way) and may
   * throw its refusal (429). Throws ApiError 400/404/503 as the file comment says.
   */
  async snapshotFor(rawDomain: string, opts: { fresh?: boolean; admitScan?: ScanAdmission } = {}): Promise<TrustSnapshot> {
    const parsed = parseDomainName(rawDomain);
    if (!parsed.ok) throw new ApiError('trust_domain_invalid', `${echo(rawDomain)} is not a domain name: ${parsed.reason}`, { hint: 'Give a bare domain such as example.com' });
    const domain = parsed.domain;
    const ownership = await this.ownershipOf(domain);
    const ownershipKey = canonicalJson(ownership);
    const cached = this.cache.get(domain);
    const usable = !opts.fresh && cached && cached.expiresAt > this.now().getTime() ? cached : undefined;
    let entry = usable ?? (await this.generateOnce(domain, ownership, ownershipKey, opts.admitScan));
    if (entry.ownershipKey !== ownershipKey) {
      // ownership changed since the scan: re-signed from the same scan, no rescan
      entry = { ...entry, snapshot: this.assemble(entry.scan, ownership), ownershipKey, onChain: undefined };
      if (this.cache.get(domain)?.scan === entry.scan) this.cache.set(domain, entry);
    }
    return this.withOnChain(entry);
  }

  /** Drops a domain's cached snapshot (tests, or a caller that knows the domain changed). */
  forget(domain: string): void {
    this.cache.delete(domain);
  }

  private async ownershipOf(domain: string): Promise<DomainOwnership> {
    if (!this.deps.sql) return OWNERSHIP_NONE;
    try {
      return (await findDomainOwnership(this.deps.sql, domain)) ?? OWNERSHIP_NONE;
    } catch {
      throw new ApiError('service_unavailable', 'The ownership records cannot be read now', { hint: 'Retry after 30 seconds' });
    }
  }

  private remember(domain: string, entry: CacheEntry) {
    if (this.deps.config.TRUST_SNAPSHOT_TTL_MS === 0) return;
    this.cache.delete(domain);
    this.cache.set(domain, entry);
    while (this.cache.size > CACHE_MAX_DOMAINS) this.cache.delete(this.cache.keys().next().value!);
  }

  /**
   * Scan, assemble, sign and cache, once per domain at a time: concurrent callers share the entry.
   * The generation is registered before its admission is awaited, so callers arriving meanwhile join
   * it instead of each taking a place of the scan quotas for the one scan (issue 20 item 6: one place
   * per scan). A caller who joined a generation whose own caller was refused (that caller's quota)
   * starts one of its own, under its own admission.
   */
  private async generateOnce(domain: string, ownership: DomainOwnership, ownershipKey: string, admit?: ScanAdmission): Promise<CacheEntry> {
    for (;;) {
      const joined = this.generations.get(domain);
      if (!joined) break;
      try {
        return await joined;
      } catch (err) {
        if (!(err instanceof AdmissionRefused)) throw err;
      }
    }
    const admitted = async (step: ((domain: string) => Promise<void>) | undefined) => {
      try {
        await step?.(domain);
      } catch (err) {
        throw new AdmissionRefused(err);
      }
    };
    const running = (async () => {
      await admitted(admit?.caller);
      // a test-only origin (TRUST_FETCH_ORIGINS) stands for a name that resolves
      if (!this.origins[domain]) await requirePublicDomain(this.lookup, domain, this.deps.config);
      await admitted(admit?.site);
      const scan = await this.scan(domain);
      const entry: CacheEntry = { scan, snapshot: this.assemble(scan, ownership), ownershipKey, expiresAt: this.now().getTime() + this.deps.config.TRUST_SNAPSHOT_TTL_MS };
      this.remember(domain, entry);
      return entry;
    })().finally(() => {
      if (this.generations.get(domain) === running) this.generations.delete(domain);
    });
    this.generations.set(domain, running);
    try {
      return await running;
    } catch (err) {
      throw err instanceof AdmissionRefused ? err.refusal : err;
    }
  }

  /** The entry's snapshot, with on_chain when its hash has a confirmed attestation. */
  private async withOnChain(entry: CacheEntry): Promise<TrustSnapshot> {
    if (!entry.onChain && this.deps.sql) {
      let row;
      try {
        row = await findAttestation(this.deps.sql, entry.snapshot.integrity.snapshot_hash);
      } catch {
        throw new ApiError('service_unavailable', 'The attestation records cannot be read now', { hint: 'Retry after 30 seconds' });
      }
      if (row?.status === 'confirmed') entry.onChain = onChainOf(row);
    }
    return entry.onChain ? { ...entry.snapshot, on_chain: entry.onChain } : entry.snapshot;
  }

  /** The origin a domain's probes are fetched from: https://{domain}, or a test-only override. */
  private originOf(domain: string): string {
    return this.origins[domain] ?? `https://${domain}`;
  }

  /** The scan of a domain already resolved (generateOnce). */
  private async scan(domain: string): Promise<Scan> {
    const { config } = this.deps;
    const origin = this.originOf(domain);
    const budget = config.TRUST_CHECK_BUDGET_MS;
    const fetched = await Promise.all(PROBE_IDS.map(async (id) => [id, await this.probe(origin, id, budget)] as const));
    const outcomes = Object.fromEntries(fetched.map(([id, f]) => [id, f.outcome])) as Record<ProbeId, ProbeOutcome>;
    const evidence = Object.fromEntries(fetched.map(([id, f]) => [id, f.evidence])) as Record<ProbeId, string>;
    const results = evaluateRules({ domain, origin, now: this.now(), outcomes });
    const ruleResults = results.map(({ rule, outcome }) => ({ id: rule.id, result: outcome.result, detail: outcome.detail.slice(0, 300), evidence_hash: evidence[rule.probe] }));
    const evidenceHashes = ruleResults.map((r) => r.evidence_hash);
    return {
      domain,
      computedAt: this.now().toISOString(),
      evidenceHashes,
      merkleRoot: merkleRoot(evidenceHashes),
      score: scoreSummary(results.map(({ rule, outcome }) => ({ weight: rule.weight, result: outcome.result }))),
      ruleResults,
    };
  }

  private async probe(origin: string, id: ProbeId, timeoutMs: number): Promise<{ outcome: ProbeOutcome; evidence: string }> {
    const { path, accept } = PROBES[id];
    const url = `${origin}${path}`;
    const scheme = url.startsWith('https:') ? 'https' : 'http';
    try {
      const res = await safeFetch(url, { timeoutMs, maxBytes: PROBE_MAX_BYTES, accept, allowPrivate: this.deps.config.TRUST_ALLOW_PRIVATE, lookup: this.lookup });
      const type = res.headers['content-type'];
      const contentType = typeof type === 'string' ? (type.split(';')[0]!.trim().toLowerCase() || null) : null;
      return {
        outcome: { url, scheme, status: res.status, contentType, text: res.body.toString('utf8'), failure: null },
        evidence: evidenceHash({ body: res.body }),
      };
    } catch (err) {
      // "no such name" and "not a public address" (a redirect to an internal name) read the same: a
      // snapshot must not tell whether an internal name exists
      const raw = err instanceof SafeFetchError ? err.reason : 'network';
      const reason = raw === 'dns_failed' || raw === 'address_refused' ? 'address_unreachable' : raw;
      return { outcome: { url, scheme, status: null, contentType: null, text: '', failure: reason }, evidence: evidenceHash({ error: reason, url }) };
    }
  }

  /** The signed snapshot of a scan with the given ownership. */
  private assemble(scan: Scan, ownership: DomainOwnership): TrustSnapshot {
    const base = (this.deps.config.PUBLIC_BASE_URL ?? '').replace(/\/+$/, '');
    const domain = scan.domain;
    const unsigned = {
      snapshot_version: SNAPSHOT_VERSION,
      spec_version: SPEC_VERSION,
      domain,
      generated_at: this.now().toISOString(),
      profile_ref: { profile_version: PROFILE_VERSION, profile_hash: PROFILE_HASH, endpoint: `${base}/rules` },
      evidence_root: { assertion_count: scan.evidenceHashes.length, evidence_hashes: scan.evidenceHashes, merkle_root: scan.merkleRoot, computed_at: scan.computedAt },
      score_summary: scan.score,
      rule_results: scan.ruleResults,
      domain_ownership: ownership,
      _links: {
        self: { href: `/api/trust/${domain}` },
        rules: { href: '/rules' },
        challenge: { href: `/api/trust/${domain}/challenge` },
        attest: { href: `/api/trust/${domain}/attest`, method: 'POST' as const },
        signature_directory: { href: '/.well-known/http-message-signatures-directory' },
      },
    };
    const hash = snapshotHash(unsigned);
    return {
      ...unsigned,
      integrity: { snapshot_hash: hash, signature_algorithm: SIGNATURE_ALGORITHM, signature: this.signer.signHash(hash), public_key: this.signer.publicKeyHex, key_id: this.signer.keyId },
    };
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's trust snapshots (api/trust/snapshots.ts): GET /api/trust/{domain}, attest and the signature directory. */
    trustSnapshots: TrustSnapshots;
  }
}

/** Gives the app its snapshot service (the `trustSnapshots` decorator): one cache, one signing key. */
export function installTrustSnapshots(app: FastifyInstance, ctx: AppContext): TrustSnapshots {
  const service = new TrustSnapshots({ config: ctx.config, ...(ctx.sql ? { sql: ctx.sql } : {}) });
  app.decorate('trustSnapshots', service);
  return service;
}
