/**
 * Domain ownership challenges (SPEC 2 "Domain ownership challenge", 4.5; DESIGN.md sections 6, 10
 * and 11; issue 19 item 8, issue 20 item 1): the state and checks behind
 * api/routes/trust/ownership.ts.
 *
 *   - issue(domain, did?, ip): anonymous, for any syntactically valid name: no DNS lookup, no
 *     workflow, no fetch, no check; one new row of domain_challenges (sweeping old rows, bounded),
 *     at most TRUST_CHALLENGES_DAILY_PER_IP new rows per address per UTC day. Two forms:
 *       - for a DID (?did=): the record or file carries the token; only that DID can verify it, so
 *         the published token proves nothing for anyone else. The DID's open challenge for the
 *         domain is handed out again (free) while it has more than a minute left.
 *       - without a DID: the record or file carries base64url(sha256(token)), the token stays with
 *         the requester; the first DID that presents the token (verify) claims the challenge.
 *         Never handed out again (each is a new row).
 *   - verify(domain, token, did, ip): signed by `did`, which must be the challenge's DID (or claim
 *     an unclaimed challenge issued without one). A proof already made and not expired answers at
 *     once; otherwise, within the DID's and the address's daily quotas (TRUST_VERIFY_DAILY_PER_DID /
 *     _PER_IP), the domain must resolve to public addresses only (404, one message for "no such
 *     name" and "private") and one check runs now (DNS TXT and the well-known file, same-host
 *     redirects only; net/ownershipProbe.ts). A proof names its DID (verified_by) and counts for
 *     TRUST_OWNERSHIP_TTL_MS (30 days); a new challenge proven the same way renews it.
 */
import { randomBytes } from 'node:crypto';
import type { AppContext } from '../context.js';
import { ApiError, echo } from '../errors.js';
import { addressSubject, DAY_MS, requireQuota } from '../quotas.js';
import { requirePublicDomain } from './domainResolves.js';
import { trustDnsServers, trustFetchOrigins } from '../../config/index.js';
import { parseHederaDid } from '@agent-passport/core/did';
import { ownershipDnsRecord, ownershipTxtValue, ownershipWellKnownUrl } from '../../domain/domainName.js';
import { hostLookup, type HostLookup } from '../../net/dnsLookup.js';
import { ownershipProber, type OwnershipProber } from '../../net/ownershipProbe.js';
import {
  claimChallenge,
  findDomainChallenge,
  findOpenChallenge,
  insertDomainChallenge,
  ownershipCurrent,
  publishedValue,
  recordChallengeCheck,
  type DomainChallengeRow,
} from '../../db/queries/domainOwnership.js';

/** Tokens: 32 random bytes, base64url (43 characters). */
const TOKEN = /^[A-Za-z0-9_-]{43}$/;

export type VerifyOutcome = { verified: true; row: DomainChallengeRow } | { verified: false; row: DomainChallengeRow; detail: string };

export class DomainOwnership {
  private readonly lookup: HostLookup;
  private readonly origins: Record<string, string>;
  private readonly prober: OwnershipProber;

  constructor(private readonly ctx: AppContext) {
    const servers = trustDnsServers(ctx.config);
    this.lookup = hostLookup(servers);
    this.origins = trustFetchOrigins(ctx.config);
    this.prober = ownershipProber({ dnsServers: servers, allowPrivate: ctx.config.TRUST_ALLOW_PRIVATE, fetchOrigins: this.origins });
  }

  private get sql() {
    return this.ctx.sql!;
  }

  private network(): string {
    return this.ctx.ledger?.deployment.network ?? this.ctx.config.HEDERA_NETWORK;
  }

  /** The DID a challenge is issued for: a ledger DID of this network (400 otherwise). */
  checkDid(did: string): string {
    const parsed = parseHederaDid(did);
    if (!parsed || parsed.network !== this.network()) {
      throw new ApiError('invalid_request', `did ${echo(did)} is not a DID of this service's network`, {
        hint: `Name the DID that will verify the challenge, ?did=did:hedera:${this.network()}:<accountId>, or leave ?did= out (the first DID to present the token claims it)`,
      });
    }
    return did;
  }

  /** A challenge to prove `domain`, for `did` or (undefined) for whoever presents its token (see the file comment). */
  async issue(domain: string, did: string | undefined, ip: string): Promise<DomainChallengeRow> {
    if (did !== undefined) {
      this.checkDid(did);
      const open = await findOpenChallenge(this.sql, domain, did);
      if (open) return open;
    }
    await requireQuota(
      this.sql,
      [{ scope: 'trust.challenge.ip', subject: addressSubject(ip), max: this.ctx.config.TRUST_CHALLENGES_DAILY_PER_IP, windowMs: DAY_MS, what: 'new ownership challenges from this address today' }],
      { code: 'trust_quota_exceeded', hint: 'an open challenge is handed out again without counting' },
    );
    return insertDomainChallenge(this.sql, {
      token: randomBytes(32).toString('base64url'),
      domain,
      did: did ?? null,
      expiresAt: new Date(Date.now() + this.ctx.config.TRUST_CHALLENGE_TTL_MS),
    });
  }

  /** Proves `domain` with the challenge `token` for the signed-in `did` (see the file comment). */
  async verify(domain: string, token: string, did: string, ip: string): Promise<VerifyOutcome> {
    const notFound = () =>
      new ApiError('trust_challenge_not_found', `No challenge ${echo(token)} of ${domain} for ${did}`, {
        hint: `Get a challenge from GET /api/trust/${domain}/challenge?did=${did} (or without ?did=, keeping its token to yourself); only the DID a challenge names, or the first to present the token of one issued without a DID, can verify it`,
      });
    if (!TOKEN.test(token)) throw notFound();
    let row = await findDomainChallenge(this.sql, domain, token);
    // a challenge issued without a DID goes to the first DID that presents its token
    if (row && row.did === null && row.publishes === 'digest') row = await claimChallenge(this.sql, domain, token, did);
    if (!row || row.did !== did) throw notFound();
    if (row.status === 'verified') {
      if (ownershipCurrent(row)) return { verified: true, row };
      throw new ApiError('trust_challenge_expired', `The ownership of ${domain} proven with this challenge expired at ${row.ownership_expires_at?.toISOString()}`, {
        hint: `Renew it: get a new challenge from GET /api/trust/${domain}/challenge?did=${did}, publish it and verify again`,
      });
    }
    if (row.status === 'expired' || row.expires_at.getTime() <= Date.now()) {
      throw new ApiError('trust_challenge_expired', `The challenge expired before ${domain} was proven`, { hint: `Get a new challenge from GET /api/trust/${domain}/challenge?did=${did}` });
    }
    const { config } = this.ctx;
    await requireQuota(
      this.sql,
      [
        { scope: 'trust.verify.did', subject: did, max: config.TRUST_VERIFY_DAILY_PER_DID, windowMs: DAY_MS, what: 'ownership checks of this DID today' },
        { scope: 'trust.verify.ip', subject: addressSubject(ip), max: config.TRUST_VERIFY_DAILY_PER_IP, windowMs: DAY_MS, what: 'ownership checks from this address today' },
      ],
      { code: 'trust_quota_exceeded', hint: 'publish the record first, then verify once' },
    );
    // the resolution and public-address rules apply here, when the owner asks (not when anyone asks for a challenge)
    if (!this.origins[domain]) await requirePublicDomain(this.lookup, domain, config);
    const { proven, detail } = await this.prober.check(domain, publishedValue(row));
    let after: DomainChallengeRow | null;
    try {
      after = await recordChallengeCheck(this.sql, token, { proven, result: detail }, config.TRUST_OWNERSHIP_TTL_MS);
    } catch {
      throw new ApiError('service_unavailable', 'The ownership check could not be recorded', { hint: 'Retry after 30 seconds' });
    }
    if (after?.status === 'verified' && ownershipCurrent(after)) return { verified: true, row: after };
    return { verified: false, row: after ?? row, detail };
  }

  /** The 403 of a check that found no proof of the challenge `row`. */
  notProven(row: DomainChallengeRow, detail: string): ApiError {
    const { domain } = row;
    const value = publishedValue(row);
    return new ApiError('trust_ownership_not_proven', `The ownership of ${domain} is not proven yet: ${detail}`, {
      hint: `Publish ${ownershipDnsRecord(domain, value)} or serve ${ownershipTxtValue(value)} at ${ownershipWellKnownUrl(domain)}, then verify again`,
    });
  }
}

