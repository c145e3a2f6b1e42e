/**
 * Activities of the domainOwnership workflow (DESIGN.md sections 6 and 10, "Ownership"). Since
 * issue 20 the API no longer starts that workflow: a challenge is checked when its DID asks (POST
 * /api/trust/{domain}/verify-ownership, api/trust/ownership.ts). The workflow type and these
 * activities stay for the executions started before (they run out within their challenge's 24 h).
 *
 * One check looks at the DNS TXT record and the well-known file (net/ownershipProbe.ts, the same
 * checker the API uses: same-host redirects only) and records the outcome in domain_challenges (a
 * proof found marks the challenge verified, once, for TRUST_OWNERSHIP_TTL_MS).
 */
import type { Sql } from 'postgres';
import { ApplicationFailure } from '@temporalio/activity';
import { ownershipProber } from '../../net/ownershipProbe.js';
import { expireChallenge, ownershipOf, recordChallengeCheck } from '../../db/queries/domainOwnership.js';
import type { OwnershipCheckResult } from '../../workflows/contracts/domainOwnership.js';

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
  /** how long a proof counts (TRUST_OWNERSHIP_TTL_MS; default 30 days) */
  ownershipTtlMs?: number;
}

export interface OwnershipCheckInput {
  domain: string;
  token: string;
}

export const DEFAULT_OWNERSHIP_TTL_MS = 30 * 86_400_000;

export function createDomainOwnershipActivities(deps: DomainOwnershipActivityDeps) {
  const { sql } = deps;
  const prober = ownershipProber(deps);
  const ttl = deps.ownershipTtlMs ?? DEFAULT_OWNERSHIP_TTL_MS;

  /**
   * One check of a challenge: DNS and the well-known file, then the outcome recorded (idempotent:
   * a challenge already verified or expired stays as it is and is returned as such).
   */
  async function checkDomainOwnership(input: OwnershipCheckInput): Promise<OwnershipCheckResult> {
    const { proven, detail } = await prober.check(input.domain, input.token);
    const row = await recordChallengeCheck(sql, input.token, { proven, result: detail }, ttl);
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
