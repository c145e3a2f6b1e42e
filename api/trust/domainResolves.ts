/**
 * Whether a domain may be scanned or proven: it has addresses, all of them public (unless
 * TRUST_ALLOW_PRIVATE, tests). One answer for "does not resolve" and "resolves only to private
 * addresses" (issue 20 item 6), so the service cannot be used to learn whether an internal name
 * exists. A resolver failure is 503 trust_snapshot_failed (retry), as it says nothing about the name.
 */
import type { Config } from '../../config/index.js';
import { HostNotFoundError, type HostLookup } from '../../net/dnsLookup.js';
import { isPublicAddress } from '../../net/safeFetch.js';
import { ApiError } from '../errors.js';

export function domainNotFound(domain: string): ApiError {
  return new ApiError('trust_domain_not_found', `${domain} does not resolve to a public address`, {
    hint: 'Check the spelling and the A/AAAA records of the domain; only domains on public addresses can be scanned or proven',
  });
}

/** Resolves `domain`; throws 404 trust_domain_not_found (one message for both cases) or 503. */
export async function requirePublicDomain(lookup: HostLookup, domain: string, config: Pick<Config, 'TRUST_ALLOW_PRIVATE'>): Promise<void> {
  let addresses: { address: string }[];
  try {
    addresses = await lookup(domain);
  } catch (err) {
    if (err instanceof HostNotFoundError) throw domainNotFound(domain);
    throw new ApiError('trust_snapshot_failed', `The name servers of ${domain} did not answer`, { hint: 'Retry in a few seconds' });
  }
  if (addresses.length === 0) throw domainNotFound(domain);
  if (!config.TRUST_ALLOW_PRIVATE && addresses.some((a) => !isPublicAddress(a.address))) throw domainNotFound(domain);
}
