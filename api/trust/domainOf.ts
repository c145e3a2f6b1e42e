/** The domain path parameter of the trust routes. */
import { ApiError, echo } from '../errors.js';
import { parseDomainName } from '../../domain/domainName.js';

/** The validated, normalised domain of a trust route, or 400 trust_domain_invalid (as GET /api/trust/{domain}). */
export function domainOf(raw: string): string {
  const parsed = parseDomainName(raw);
  if (!parsed.ok) throw new ApiError('trust_domain_invalid', `${echo(raw)} is not a domain name: ${parsed.reason}`, { hint: 'Give a bare domain such as example.com (no scheme, port, path or IP address)' });
  return parsed.domain;
}
