/** Database activities of the passport workflows: the projection the API reads (thin over db/queries). */
import { ApplicationFailure } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { findPaymentByTransactionId } from '../../db/queries/payments.js';
import { beginRequestLedgerWrites, markPassportRevoked, markRequestFailed, recordIssuedPassport, recordUpgradedPassport, type NewPassport, type RequestFailedStep } from '../../db/queries/passports.js';
import { normalizePayer } from '../../ledger/x402/ids.js';
import { callerRunId } from '../callerRun.js';
import { NOT_OWN_CLAIM, ownClaim, type RunClaim } from '../ownClaim.js';
import { Context } from '@temporalio/activity';

export function createPassportDbActivities(deps: { sql: Sql }) {
  const { sql } = deps;

  /**
   * The x402 preHandler settled the payment before the workflow started; this checks the recorded
   * settlement (payer and amount) so a workflow never works for an unsettled or refunded payment.
   * Refusals (final): PaymentNotFound (no such payment recorded), PaymentNotSettled (recorded but
   * not settled, or already refunded), PaymentMismatch (payer or amount differ from the request),
   * RequestNotPending (the request's claim was refused, refunded or released: its payment is owed back).
   */
  async function confirmSettlement(input: { paymentTransactionId: string; payer: string; amountTinybars: string }): Promise<{ status: string }> {
    const p = await findPaymentByTransactionId(sql, input.paymentTransactionId);
    if (!p) {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} is not recorded`, type: 'PaymentNotFound', nonRetryable: true });
    }
    if (p.status !== 'settled') {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} is ${p.status}, not settled`, type: 'PaymentNotSettled', nonRetryable: true });
    }
    const payer = (s: string) => normalizePayer(s) ?? s;
    if (payer(p.payer) !== payer(input.payer) || p.amount_tinybars.toString() !== input.amountTinybars) {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} does not match the request`, type: 'PaymentMismatch', nonRetryable: true });
    }
    // the last step before the mint (or the metadata update): the claim is taken to the ledger here,
    // unless it was refused meanwhile (an API that took the workflow for gone), whose refund is then
    // owed instead of a passport: never both (db/migrations/0055)
    const claim = await beginRequestLedgerWrites(sql, input.paymentTransactionId, callerRunId(), Context.current().info.workflowExecution?.workflowId ?? '');
    if (claim === 'not_own') {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} pays for a request of another workflow`, type: NOT_OWN_CLAIM, nonRetryable: true });
    }
    if (claim === 'refused' || claim === 'refunded' || claim === 'failed') {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId}: its request is ${claim}, so nothing is issued for it`, type: 'RequestNotPending', nonRetryable: true });
    }
    return { status: p.status };
  }

  /**
   * The first step of a passport run (issue 26 item 2): the claim its payment paid for, which must
   * name this run's workflow; the run takes tier, capabilities, owner and passport from it, never
   * from its input. Refused (final, NotOwnClaim): a run that is not the claim's moves nothing.
   */
  async function claimOfRun(input: { paymentTransactionId: string }): Promise<RunClaim> {
    return (await ownClaim(sql, input.paymentTransactionId)).claim;
  }

  async function recordPassport(input: NewPassport): Promise<{ issuedAt: number }> {
    const row = await recordIssuedPassport(sql, input);
    return { issuedAt: row.issued_at.getTime() };
  }

  async function recordUpgrade(input: { paymentTransactionId: string; tokenId: string; serial: number; newTier: string; capabilities: string[] }): Promise<void> {
    await recordUpgradedPassport(sql, input);
  }

  async function markRevoked(input: { tokenId: string; serial: number; reason: string | null; revokedAtMs: number }): Promise<{ revoked: boolean }> {
    return { revoked: await markPassportRevoked(sql, input.tokenId, input.serial, input.reason, input.revokedAtMs) };
  }

  /**
   * Ends a pending issuance or upgrade whose payment could not be confirmed settled and has nothing
   * to refund ('failed', with the step that failed as data), so the wallet or passport is free
   * again. Idempotent.
   */
  async function releaseClaim(input: { paymentTransactionId: string; reason: string; failedStep?: RequestFailedStep }): Promise<{ released: boolean }> {
    return { released: await markRequestFailed(sql, input.paymentTransactionId, input.reason.slice(0, 500), input.failedStep, callerRunId()) };
  }

  return { confirmSettlement, claimOfRun, recordPassport, recordUpgrade, markRevoked, releaseClaim };
}

export type PassportDbActivities = ReturnType<typeof createPassportDbActivities>;
