/**
 * trustAttest (id trust-attest:{domain}:{snapshotHash}), started by POST /api/trust/{domain}/attest
 * after the API recorded the snapshot in trust_attestations: writes the snapshot hash on chain
 * through the passport contract's attestDomain and returns the SPEC on_chain object.
 *
 * One activity, idempotent per snapshot hash (activities/evm/attest.ts records the signed
 * transaction before sending it), so Temporal's retries and a second request for the same snapshot
 * (same workflow id, or a later run after this one closed) never send a second transaction.
 */
import { proxyActivities } from '@temporalio/workflow';
import type { AttestActivities } from '../activities/evm/attest.js';
import type { OnChainAttestation, TrustAttestInput } from './contracts/trustAttest.js';
import { HEARTBEAT_TIMEOUT_MS, RETRY_MAXIMUM_MS } from './activityOptions.js';
import { requireBoundStart } from './binding.js';

export async function trustAttest(input: TrustAttestInput): Promise<OnChainAttestation> {
  requireBoundStart(input, 'trustAttest'); // an input written for another workflow starts nothing (issue 26)
  const evm = proxyActivities<AttestActivities>({
    // one attempt: a call, a signature, a send and the wait for the receipt (60 s at most)
    startToCloseTimeout: 120_000,
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, // a dead worker's attempt is retried within it (worker/keepAlive.ts)
    retry: { initialInterval: input.retryInitialMs ?? 1_000, maximumInterval: input.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2, maximumAttempts: input.maxAttempts ?? 10 },
  });
  return evm.attestSnapshot({ domain: input.domain, snapshotHash: input.snapshotHash });
}
