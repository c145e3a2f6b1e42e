/**
 * The {domain} of the trust routes (GET /api/trust/{domain}, .../challenge, .../verify-ownership,
 * .../attest): one validator for all of them, so a domain means the same thing everywhere.
 *
 * Accepted: a DNS host name of at least two labels, given in Unicode or ASCII, any case, with at
 * most one trailing dot. Returned normalised: IDNA to ASCII (punycode, via the WHATWG URL parser
 * every runtime has), lower case, no trailing dot. Refused: IP literals in any form the URL parser
 * understands (dotted, decimal 2852039166, hex 0xA9FEA9FE, octal, bracketed IPv6), ports, paths,
 * user info, labels over 63 characters or names over 253, labels with characters outside
 * [a-z0-9-] or starting or ending with '-', an all-numeric top-level label.
 */

import { sha256Base64url } from './hash.js';

export const DOMAIN_MAX_LENGTH = 253;
const LABEL = /^(?!-)[a-z0-9-]{1,63}(?<!-)$/;
const IPV4 = /^\d{1,3}(\.\d{1,3}){3}$/;

export type DomainNameResult = { ok: true; domain: string } | { ok: false; reason: string };

/** Validates and normalises a domain name (see the file comment); never throws. */
export function parseDomainName(input: string): DomainNameResult {
  if (typeof input !== 'string' || input.length === 0) return { ok: false, reason: 'the domain is empty' };
  if (input.length > DOMAIN_MAX_LENGTH + 1) return { ok: false, reason: `the domain is longer than ${DOMAIN_MAX_LENGTH} characters` };
  if (input.startsWith('[') || input.includes(':')) return { ok: false, reason: 'ports and IPv6 literals are not domains' };
  if (/[\s/\\?#@%]/.test(input)) return { ok: false, reason: 'a domain has no path, query, user info or spaces' };
  let host: string;
  try {
    host = new URL(`http://${input}/`).hostname;
  } catch {
    return { ok: false, reason: 'not a valid domain name' };
  }
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host.startsWith('[') || IPV4.test(host)) return { ok: false, reason: 'IP addresses are not domains' };
  if (host.length === 0 || host.length > DOMAIN_MAX_LENGTH) return { ok: false, reason: `a domain has 1 to ${DOMAIN_MAX_LENGTH} characters` };
  const labels = host.split('.');
  if (labels.length < 2) return { ok: false, reason: 'a domain has at least two labels (name.tld)' };
  if (!labels.every((l) => LABEL.test(l))) return { ok: false, reason: 'each label has 1 to 63 letters, digits or hyphens, not at either end' };
  if (/^\d+$/.test(labels[labels.length - 1]!)) return { ok: false, reason: 'the top-level label cannot be numeric' };
  return { ok: true, domain: host };
}

/** How an ownership challenge was proven: the DNS TXT record or the well-known file. */
export type OwnershipMethod = 'dns' | 'well-known';

/** The DNS name that carries the ownership TXT record (DESIGN.md section 6). */
export function ownershipDnsName(domain: string): string {
  return `_agent-passport.${domain}`;
}

/** The well-known path that carries the ownership token (DESIGN.md section 6). */
export const OWNERSHIP_WELL_KNOWN_PATH = '/.well-known/agent-passport-challenge.txt';

export function ownershipWellKnownUrl(domain: string): string {
  return `https://${domain}${OWNERSHIP_WELL_KNOWN_PATH}`;
}

/**
 * The TXT record value (and the well-known file's line) that proves a challenge: `value` is what the
 * challenge publishes, its token (issued for a DID) or ownershipTokenDigest(token) (issued without).
 */
export function ownershipTxtValue(value: string): string {
  return `agent-passport-verification=${value}`;
}

/**
 * What a challenge issued without a DID publishes instead of its token: base64url(sha256(token)),
 * 43 characters. The token stays with the requester and claims the challenge at verify-ownership;
 * the published digest does not give it away.
 */
export function ownershipTokenDigest(token: string): string {
  return sha256Base64url(token);
}

/** The record to publish, in zone-file form: `_agent-passport.example.com. TXT "agent-passport-verification=<value>"`. */
export function ownershipDnsRecord(domain: string, value: string): string {
  return `${ownershipDnsName(domain)}. TXT "${ownershipTxtValue(value)}"`;
}
