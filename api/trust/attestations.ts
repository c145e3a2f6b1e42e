/**
 * Who may have a domain's snapshot written on chain, and what an attestation's state is
 * (POST /api/trust/{domain}/attest and its poll URL; issue 20 item 5, issue 19 item 11).
 *
 *   - requireOwnership: the signing DID must hold a proven, unexpired ownership of the domain
 *     (domain_challenges.verified_by, TRUST_OWNERSHIP_TTL_MS), else 403 trust_ownership_required
 *     with the steps to prove it;
 *   - openCharged: a snapshot hash never attested (or whose attempt failed) is one EVM
 *     transaction paid by the service: opening it takes one place of the DID's daily quota
 *     (TRUST_ATTEST_DAILY_PER_DID, PostgreSQL, 429 trust_quota_exceeded with the rate-limit headers).
 *     Asking again for a hash already recorded (running or confirmed) takes none;
 *   - attestSnapshot: the domain's current snapshot (exactly as GET /api/trust/{domain} serves it),
 *     opened as above, and the trustAttest workflow (id trust-attest:{domain}:{snapshot_hash}) that
 *     sends attestDomain(domain, hash) to the passport contract once per snapshot hash, waited for
 *     at most the app's bounded wait (then WorkflowPending, polled at attestationUrl);
 *   - attestationState: the body of GET /api/trust/{domain}/attestations/{snapshot_hash}, the
 *     Location of attest's 202.
 */
import type { Sql } from 'postgres';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { DAY_MS, requireQuota } from '../quotas.js';
import { startOrAttach, waitForResult } from '../workflowCalls.js';
import type { WorkflowSettings } from '../workflowSettings.js';
import type { ScanAdmission, TrustSnapshots } from './snapshots.js';
import { findOwnershipBy } from '../../db/queries/domainOwnership.js';
import { findAttestation, onChainOf, openAttestationOnce, type AttestationRow, type OnChainAttestation } from '../../db/queries/trustAttestations.js';
import { giveBackQuota } from '../../db/queries/quotas.js';
import { trustAttestContract, trustAttestWorkflowId, type TrustAttestInput } from '../../workflows/contracts/trustAttest.js';

export async function requireOwnership(sql: Sql, domain: string, did: string): Promise<void> {
  let row;
  try {
    row = await findOwnershipBy(sql, domain, did);
  } catch {
    throw new ApiError('service_unavailable', 'The ownership records cannot be read now', { hint: 'Retry after 30 seconds' });
  }
  if (row) return;
  throw new ApiError('trust_ownership_required', `${did} has no proven ownership of ${domain} (or it expired)`, {
    hint: `Prove it first: GET /api/trust/${domain}/challenge?did=${did}, publish the TXT record or the well-known file it names, then POST /api/trust/${domain}/verify-ownership { did, token } signed by ${did}`,
  });
}

const attestQuota = (ctx: AppContext, did: string) => ({ scope: 'trust.attest.did', subject: did, max: ctx.config.TRUST_ATTEST_DAILY_PER_DID, windowMs: DAY_MS });

/**
 * Opens the attestation of a snapshot for `did`, charging the DID's daily quota when this call is
 * the one that opens it (a new hash, or a failed one tried again): the place is taken first (429
 * when none is left, nothing recorded) and given back when another request opened the row first,
 * so concurrent requests for one hash take one place.
 */
export async function openCharged(ctx: AppContext, did: string, a: Parameters<typeof openAttestationOnce>[1]): Promise<AttestationRow> {
  const sql = ctx.sql!;
  const known = await findAttestation(sql, a.snapshotHash);
  if (known && known.status !== 'failed') return known;
  const now = new Date();
  await requireQuota(sql, [{ ...attestQuota(ctx, did), what: 'new attestations by this DID today' }], {
    code: 'trust_quota_exceeded',
    hint: 'snapshots already attested are answered without a new transaction',
    now,
  });
  const { row, opened } = await openAttestationOnce(sql, a);
  if (!opened) await giveBackQuota(sql, attestQuota(ctx, did), now).catch(() => undefined);
  return row;
}

/** What attest ends in: the recorded attestation on chain, or its workflow still running (poll attestationUrl). */
export type AttestOutcome = { row: AttestationRow; onChain: OnChainAttestation };

/**
 * Has the domain's current snapshot written on chain for `did` (whose passport and ownership the
 * route checked): 503 without an EVM chain configured; a snapshot already attested answers at once.
 */
export async function attestSnapshot(ctx: AppContext, settings: WorkflowSettings, snapshots: TrustSnapshots, r: { domain: string; did: string; admitScan: ScanAdmission }): Promise<AttestOutcome> {
  const { domain, did } = r;
  const { EVM_RPC_URL, EVM_CHAIN_ID, PASSPORT_CONTRACT_ADDRESS } = ctx.config;
  if (!EVM_RPC_URL || !EVM_CHAIN_ID || !PASSPORT_CONTRACT_ADDRESS) {
    throw new ApiError('service_unavailable', 'No EVM chain is configured for attestations', { hint: 'The operator must set EVM_RPC_URL, EVM_CHAIN_ID, PASSPORT_CONTRACT_ADDRESS and EVM_ATTESTER_KEY' });
  }

  const snapshot = await snapshots.snapshotFor(domain, { admitScan: r.admitScan });
  const hash = snapshot.integrity.snapshot_hash;
  const { on_chain: _ignored, ...toRecord } = snapshot;
  // a hash already recorded (running or confirmed) costs nothing more; a new or failed one is a transaction
  const row = await openCharged(ctx, did, {
    snapshotHash: hash,
    domain,
    attestedBy: did,
    chainId: EVM_CHAIN_ID,
    contractAddress: PASSPORT_CONTRACT_ADDRESS.toLowerCase(),
    snapshot: toRecord as Record<string, unknown>,
  });
  if (row.status === 'confirmed') return { row, onChain: onChainOf(row) };

  const workflowId = trustAttestWorkflowId(domain, hash);
  const input: TrustAttestInput = { domain, snapshotHash: hash };
  const handle = await startOrAttach(ctx, trustAttestContract, workflowId, input, { staticSummary: `attest ${domain} ${hash.slice(0, 12)}… for ${did}` });
  const result = await waitForResult(handle, settings.workflowWaitMs, attestationUrl(domain, hash)).catch((err: unknown) => {
    if (err instanceof ApiError && err.code === 'execution_failed') {
      throw new ApiError('execution_failed', `The attestation of ${domain} could not be written on chain`, { hint: `Retry the request; workflow ${workflowId}` });
    }
    throw err;
  });
  return { row, onChain: result };
}

/** The poll URL of an attestation (attest's 202 Location). */
export function attestationUrl(domain: string, snapshotHash: string): string {
  return `/api/trust/${encodeURIComponent(domain)}/attestations/${snapshotHash}`;
}

export interface AttestationState {
  domain: string;
  snapshot_hash: string;
  status: 'pending' | 'sending' | 'confirmed' | 'failed';
  attested_by: string;
  requested_at: string;
  updated_at: string;
  on_chain?: OnChainAttestation;
  /** the attested snapshot with on_chain, once confirmed (what attest answers with 200) */
  snapshot?: Record<string, unknown>;
  _links: Record<string, { href: string; method?: 'GET' | 'POST' }>;
}

export function attestationState(row: AttestationRow): AttestationState {
  const d = encodeURIComponent(row.domain);
  const confirmed = row.status === 'confirmed';
  const onChain = confirmed ? onChainOf(row) : undefined;
  return {
    domain: row.domain,
    snapshot_hash: row.snapshot_hash,
    status: row.status,
    attested_by: row.attested_by,
    requested_at: row.created_at.toISOString(),
    updated_at: row.updated_at.toISOString(),
    ...(onChain ? { on_chain: onChain, snapshot: { ...row.snapshot, on_chain: onChain } } : {}),
    _links: {
      self: { href: attestationUrl(row.domain, row.snapshot_hash) },
      snapshot: { href: `/api/trust/${d}` },
      attest: { href: `/api/trust/${d}/attest`, method: 'POST' },
    },
  };
}
