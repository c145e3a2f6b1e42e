/**
 * domainOwnership (id domain-challenge:{domain}:{token}), started by GET /api/trust/{domain}/challenge:
 * checks the DNS TXT record and the well-known file every `pollIntervalMs` until one holds the
 * token (verified) or the challenge's 24 h are over (expired). Every check is recorded in
 * domain_challenges by the activity, so the snapshots see a proof as soon as it is made.
 *
 * Update `checkNow` (POST /api/trust/{domain}/verify-ownership): asks for a check at once and
 * answers its outcome. The handler does not call the activity itself: it raises a flag and waits
 * for the main loop's next check, so checks never run concurrently and the history stays one
 * sequence of checks. Its validator refuses the update once the challenge has ended (the route
 * then reads the recorded outcome).
 */
import { allHandlersFinished, condition, proxyActivities, setHandler } from '@temporalio/workflow';
import type { DomainOwnershipActivities } from '../activities/web/domainOwnership.js';
import { checkNowUpdate, ownershipStateQuery, type DomainOwnershipInput, type OwnershipCheckResult } from './contracts/domainOwnership.js';
import { DB_ACTIVITY_TIMEOUT_MS, HEARTBEAT_TIMEOUT_MS, RETRY_MAXIMUM_MS } from './activityOptions.js';
import { requireBoundStart } from './binding.js';

export const DEFAULT_OWNERSHIP_POLL_MS = 5 * 60_000;

export async function domainOwnership(input: DomainOwnershipInput): Promise<OwnershipCheckResult> {
  requireBoundStart(input, 'domainOwnership'); // an input written for another workflow starts nothing (issue 26)
  const acts = proxyActivities<DomainOwnershipActivities>({
    // one check is two probes of at most 5 s each, run side by side, and one UPDATE
    startToCloseTimeout: DB_ACTIVITY_TIMEOUT_MS,
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
    retry: { initialInterval: input.retryInitialMs ?? 1_000, maximumInterval: input.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2, maximumAttempts: 5 },
  });
  const ref = { domain: input.domain, token: input.token };
  const pollMs = Math.max(1, input.pollIntervalMs ?? DEFAULT_OWNERSHIP_POLL_MS);

  let last: OwnershipCheckResult | null = null;
  /** checks begun and checks finished (a checkNow waits for one begun after it asked) */
  let started = 0;
  let finished = 0;
  let requested = false;
  let ended = false;

  const notChecked = (detail: string): OwnershipCheckResult => ({
    status: 'pending',
    ownership: { method: 'none', verified: false, verified_at: null, challenge_token: input.token, proof: '' },
    detail,
  });

  setHandler(ownershipStateQuery, () => last);
  setHandler(
    checkNowUpdate,
    async () => {
      const wanted = started + 1;
      requested = true;
      await condition(() => finished >= wanted || ended);
      return last ?? notChecked('not checked yet');
    },
    {
      validator: () => {
        if (ended) throw new Error('the challenge has ended');
      },
    },
  );

  for (;;) {
    requested = false;
    started++;
    try {
      last = await acts.checkDomainOwnership(ref);
    } catch (err) {
      // A check that failed for good (DNS resolver and database both down through every retry) is
      // no outcome: say so to a waiting caller and try again at the next interval, until expiry.
      last = last?.status === 'pending' || last === null ? notChecked(`the check could not run: ${err instanceof Error ? err.message : 'error'}`) : last;
    }
    finished++;
    if (last.status !== 'pending') break;
    const remaining = input.expiresAtMs - Date.now();
    if (remaining <= 0) break;
    await condition(() => requested, Math.min(pollMs, remaining));
  }
  if (last.status !== 'verified') last = await acts.expireDomainChallenge(ref);
  ended = true;
  // a caller waiting in checkNow gets the final outcome before the run closes
  await condition(allHandlersFinished);
  return last;
}
