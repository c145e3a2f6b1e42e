/**
 * What an uncached trust scan costs the caller (issue 20 item 6; DESIGN.md section 11 "Costs"). A
 * scan is 12 fetches of at most 256 KiB from the domain's host; a cached snapshot is free. Two
 * quotas, both in PostgreSQL (shared by every API instance), 429 trust_quota_exceeded with the
 * rate-limit headers:
 *   - per client address per UTC day (TRUST_SCANS_DAILY_PER_IP): what one caller can make the
 *     service fetch;
 *   - per registrable domain per hour (TRUST_SCANS_HOURLY_PER_SITE), all callers together: every
 *     subdomain of example.com (a.example.com, b.c.example.com, ...) counts against example.com, so
 *     wildcard DNS, which gives every made-up subdomain its own cache entry, cannot turn the service
 *     into a stream of requests to one site. The registrable domain comes from the Public Suffix List
 *     (tldts, private section included, so foo.github.io and bar.github.io are separate sites).
 * The caller's quota is taken before the name is looked up (a refused caller makes no lookup, and a
 * name that does not resolve still cost its caller a place); the site's only once the name resolved
 * to public addresses (issue 26 item 8), so made-up subdomains of a site that does not answer them
 * (no wildcard record) take nothing of that site's hour. A caller refused by the site's quota keeps
 * its place taken: the lookup ran, and it is what bounds a caller's lookups per day.
 */
import type { FastifyRequest } from 'fastify';
import { getDomain } from 'tldts';
import type { AppContext } from '../context.js';
import { addressSubject, DAY_MS, requireQuota } from '../quotas.js';
import type { ScanAdmission } from './snapshots.js';

const HOUR_MS = 3_600_000;

/** The registrable domain (eTLD+1) a domain's scans are counted against; the domain itself when it has none. */
export function siteOf(domain: string): string {
  return getDomain(domain, { allowPrivateDomains: true }) ?? domain;
}

const HINT = { code: 'trust_quota_exceeded', hint: 'snapshots already scanned (cached) are served without this quota' } as const;

/** The admitScan of a request: one place of the address's quota, then (the name resolved) one of the site's. */
export function scanAdmission(ctx: AppContext, request: FastifyRequest): ScanAdmission {
  const sql = ctx.sql!;
  const callerQuota = {
    scope: 'trust.scan.ip',
    subject: addressSubject(request.ip),
    max: ctx.config.TRUST_SCANS_DAILY_PER_IP,
    windowMs: DAY_MS,
    what: 'new trust scans from this address today',
  };
  return {
    caller: () => requireQuota(sql, [callerQuota], HINT),
    site: (domain) =>
      requireQuota(
        sql,
        [{ scope: 'trust.scan.site', subject: siteOf(domain), max: ctx.config.TRUST_SCANS_HOURLY_PER_SITE, windowMs: HOUR_MS, what: `new trust scans of ${siteOf(domain)} and its subdomains this hour` }],
        HINT,
      ),
  };
}
