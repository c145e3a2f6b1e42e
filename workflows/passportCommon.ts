/** Activity proxies and failure helpers shared by the passport workflows (deterministic code only). */
import { ActivityFailure, ApplicationFailure, patched, proxyActivities } from '@temporalio/workflow';
import type { PassportLedgerActivities } from '../activities/ledger/passports.js';
import type { PassportDbActivities } from '../activities/db/passports.js';
import type { PaymentSettlementActivities } from '../activities/ledger/paymentSettlement.js';
import type { FailedStep, PassportWorkflowTimings, PaymentRef } from './contracts/passport.js';
import type { PassportIssuanceInput } from './contracts/passportIssuance.js';
import type { PassportUpgradeInput } from './contracts/passportUpgrade.js';
import type { RunClaim } from '../activities/ownClaim.js';
import { UNBOUND_MESSAGE } from './binding.js';
import { HEARTBEAT_TIMEOUT_MS, LEDGER_ACTIVITY_TIMEOUT_MS, LEDGER_MAX_ATTEMPTS, RETRY_MAXIMUM_MS } from './activityOptions.js';

/** Failure types that no retry can fix (see activities/ledger/passports.ts and activities/db/passports.ts). */
const FINAL_TYPES = ['PaymentNotFound', 'PaymentNotSettled', 'PaymentMismatch', 'PaymentSettlementFailed', 'NotOwnClaim'];

export function passportActivities(timings: PassportWorkflowTimings = {}) {
  const retryBase = {
    initialInterval: timings.retryInitialMs ?? 1_000,
    maximumInterval: timings.retryMaximumMs ?? RETRY_MAXIMUM_MS,
    backoffCoefficient: 2,
    nonRetryableErrorTypes: FINAL_TYPES,
  };
  const startToCloseTimeout = timings.activityTimeoutMs ?? LEDGER_ACTIVITY_TIMEOUT_MS;
  const heartbeatTimeout = HEARTBEAT_TIMEOUT_MS; // a dead worker's attempt is retried within it (worker/keepAlive.ts)
  return {
    /** Ledger writes with a saga behind them: bounded attempts, then they count as failed for good. */
    steps: proxyActivities<PassportLedgerActivities>({
      startToCloseTimeout,
      heartbeatTimeout,
      retry: { ...retryBase, maximumAttempts: timings.ledgerMaxAttempts ?? LEDGER_MAX_ATTEMPTS },
    }),
    /**
     * Writes that must eventually happen (settlement, audit, projection, refunds): retried until they
     * do. The settlement decides itself when a payment can never settle (a final failure).
     */
    durable: proxyActivities<PassportLedgerActivities & PassportDbActivities & PaymentSettlementActivities>({
      startToCloseTimeout,
      heartbeatTimeout,
      retry: retryBase, // no maximumAttempts: unlimited (the SDK refuses 0)
    }),
  };
}

/** A short reason for a failed activity: the ledger status when there is one. */
export function failureReason(err: unknown): string {
  let e: unknown = err;
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  if (e instanceof ApplicationFailure) return e.type ? `${e.type}: ${e.message}` : e.message;
  return e instanceof Error ? e.message : String(err);
}

export function isActivityFailure(err: unknown): err is ActivityFailure {
  return err instanceof ActivityFailure;
}

/** How a request that cannot go on ended for its payment. */
export type PaymentOutcome = { status: 'refunded'; refundTransactionId: string } | { status: 'released' };

/**
 * Pays back the payment of a request that cannot go on (refundPayment is idempotent per payment,
 * and marks the request 'refunded'); when there is nothing to refund (no settled payment, here or
 * on the ledger) or the refund fails for good, releases the claim instead ('failed', with the
 * reason), so no request stays pending once its workflow is over.
 */
export async function refundOrRelease(
  durable: ReturnType<typeof passportActivities>['durable'],
  paymentTransactionId: string,
  reason: string,
  failedStep: FailedStep,
): Promise<PaymentOutcome> {
  try {
    const r = await durable.refundPayment({ paymentTransactionId, reason, failedStep });
    return { status: 'refunded', refundTransactionId: r.refundTransactionId };
  } catch (err) {
    if (!isActivityFailure(err)) throw err;
    await durable.releaseClaim({ paymentTransactionId, reason: `${reason}; not refunded: ${failureReason(err)}`, failedStep });
    return { status: 'released' };
  }
}

/** patched() id of the settlement as the first step of the issuance and upgrade workflows (issue 23). */
export const SETTLE_IN_WORKFLOW_PATCH = 'x402-settle-in-workflow';

/** The type of the settle step's final failure that says nothing moved (the payment is 'failed'). */
const SETTLEMENT_FAILED = 'PaymentSettlementFailed';

function failureType(err: unknown): string | undefined {
  let e: unknown = err;
  while (e instanceof ActivityFailure && e.cause) e = e.cause;
  return e instanceof ApplicationFailure ? (e.type ?? undefined) : undefined;
}

/**
 * The first step of the issuance and upgrade workflows since issue 23: settles the x402 payment the
 * API verified and recorded (settlePayment re-checks it against the request's claim and the catalog).
 * Null once the payment is settled. A settlement that failed for good (nothing moved) releases the
 * claim ('failed', failed step 'settle') and returns 'released'; any other final refusal is undone
 * like a failed confirmation (refunded when the ledger took the money after all, else released).
 */
export async function settleOrUndo(
  durable: ReturnType<typeof passportActivities>['durable'],
  payment: PaymentRef,
): Promise<(PaymentOutcome & { failedStep: 'settle'; reason: string }) | null> {
  try {
    await durable.settlePayment({ paymentTransactionId: payment.transactionId, ...(payment.paymentSignature ? { paymentSignature: payment.paymentSignature } : {}) });
    return null;
  } catch (err) {
    if (!isActivityFailure(err)) throw err;
    const reason = `settle failed: ${failureReason(err)}`;
    if (failureType(err) === SETTLEMENT_FAILED) {
      await durable.releaseClaim({ paymentTransactionId: payment.transactionId, reason, failedStep: 'settle' });
      return { status: 'released', failedStep: 'settle', reason };
    }
    return { ...(await refundOrRelease(durable, payment.transactionId, reason, 'settle')), failedStep: 'settle', reason };
  }
}

/** patched() id of the release-or-refund of a request whose payment confirmation failed. */
const UNCONFIRMED_PAYMENT_PATCH = 'refund-or-release-unconfirmed-payment';

/**
 * confirmSettlement, first step of the issuance and upgrade workflows. When it refuses (a final
 * PaymentNotFound / PaymentNotSettled / PaymentMismatch), the payment is refunded or the claim
 * released and that outcome returned for the workflow's result; null when the payment is confirmed.
 * Before the patch the workflow failed here and left its claim pending for good.
 */
export async function confirmSettlementOrUndo(
  durable: ReturnType<typeof passportActivities>['durable'],
  payment: PaymentRef,
): Promise<(PaymentOutcome & { failedStep: 'confirmSettlement'; reason: string }) | null> {
  try {
    await durable.confirmSettlement({ paymentTransactionId: payment.transactionId, payer: payment.payer, amountTinybars: payment.amountTinybars });
    return null;
  } catch (err) {
    if (!isActivityFailure(err) || !patched(UNCONFIRMED_PAYMENT_PATCH)) throw err;
    const reason = `confirmSettlement failed: ${failureReason(err)}`;
    return { ...(await refundOrRelease(durable, payment.transactionId, reason, 'confirmSettlement')), failedStep: 'confirmSettlement', reason };
  }
}

/** patched() id: a passport run takes its terms from its own claim row, and acts only on that (issue 26 item 2). */
export const OWN_CLAIM_PATCH = 'passport-run-acts-on-own-claim';

/**
 * The run's own claim (activities/ownClaim.ts), the first step: a claim that is not this workflow's
 * (a copied input started under another id) fails the run before anything moves: nothing is settled,
 * minted or refunded for a payment another run owns.
 */
async function ownClaimOrFail<K extends RunClaim['kind']>(
  durable: ReturnType<typeof passportActivities>['durable'],
  payment: PaymentRef,
  kind: K,
): Promise<Extract<RunClaim, { kind: K }>> {
  let claim: RunClaim;
  try {
    claim = await durable.claimOfRun({ paymentTransactionId: payment.transactionId });
  } catch (err) {
    if (!isActivityFailure(err)) throw err;
    throw ApplicationFailure.create({ type: UNBOUND_MESSAGE, message: `Not this run's claim: ${failureReason(err)}`, nonRetryable: true });
  }
  if (claim.kind !== kind) throw ApplicationFailure.create({ type: UNBOUND_MESSAGE, message: `payment ${payment.transactionId} pays for an ${claim.kind}, not an ${kind}`, nonRetryable: true });
  return claim as Extract<RunClaim, { kind: K }>;
}

/** What an issuance mints and for whom: its claim's terms (before OWN_CLAIM_PATCH, histories took the input's). */
export async function issuanceTerms(durable: ReturnType<typeof passportActivities>['durable'], input: PassportIssuanceInput): Promise<Extract<RunClaim, { kind: 'issuance' }>> {
  if (!patched(OWN_CLAIM_PATCH)) {
    return { kind: 'issuance', network: input.network, accountId: input.accountId, did: input.did, tier: input.tier, capabilities: input.capabilities, endpoint: input.endpoint ?? null };
  }
  return ownClaimOrFail(durable, input.payment, 'issuance');
}

/** What an upgrade rewrites: its claim's terms (before OWN_CLAIM_PATCH, histories took the input's). */
export async function upgradeTerms(durable: ReturnType<typeof passportActivities>['durable'], input: PassportUpgradeInput): Promise<Extract<RunClaim, { kind: 'upgrade' }>> {
  if (!patched(OWN_CLAIM_PATCH)) {
    return { kind: 'upgrade', tokenId: input.tokenId, serial: input.serial, accountId: input.accountId, did: input.did, oldTier: input.oldTier, newTier: input.newTier, capabilities: input.capabilities };
  }
  return ownClaimOrFail(durable, input.payment, 'upgrade');
}
