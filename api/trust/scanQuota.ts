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
 * A refused scan fetches nothing, not even the DNS lookup of the name.
 */
import type { FastifyRequest } from 'fastify';
import { getDomain } from 'tldts';
import type { AppContext } from '../context.js';
import { addressSubject, DAY_MS, requireQuota } from '../quotas.js';

const HOUR_MS = 3_600_000;

/** The registrable domain (eTLD+1) a domain's scans are counted against; the domain itself when it has none. */
export function siteOf(domain: string): string {
  return getDomain(domain, { allowPrivateDomains: true }) ?? domain;
}

/** The admitScan of a request: takes one place of the address's and the site's quotas. */
export function scanAdmission(ctx: AppContext, request: FastifyRequest): (domain: string) => Promise<void> {
  return (domain) =>
    requireQuota(
      ctx.sql!,
      [
        { scope: 'trust.scan.ip', subject: addressSubject(request.ip), max: ctx.config.TRUST_SCANS_DAILY_PER_IP, windowMs: DAY_MS, what: 'new trust scans from this address today' },
        { scope: 'trust.scan.site', subject: siteOf(domain), max: ctx.config.TRUST_SCANS_HOURLY_PER_SITE, windowMs: HOUR_MS, what: `new trust scans of ${siteOf(domain)} and its subdomains this hour` },
      ],
      { code: 'trust_quota_exceeded', hint: 'snapshots already scanned (cached) are served without this quota' },
    );
}
