/** Database activities of the passport workflows: the projection the API reads (thin over db/queries). */
import { ApplicationFailure } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { findPaymentByTransactionId } from '../../db/queries/payments.js';
import { markPassportRevoked, recordIssuedPassport, recordUpgradedPassport, type NewPassport } from '../../db/queries/passports.js';

export function createPassportDbActivities(deps: { sql: Sql }) {
  const { sql } = deps;

  /**
   * The x402 preHandler settled the payment before the workflow started; this checks the recorded
   * settlement (payer and amount) so a workflow never works for an unsettled or refunded payment.
   */
  async function confirmSettlement(input: { paymentTransactionId: string; payer: string; amountTinybars: string }): Promise<{ status: string }> {
    const p = await findPaymentByTransactionId(sql, input.paymentTransactionId);
    if (!p || p.status !== 'settled') {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} is ${p?.status ?? 'unknown'}, not settled`, type: 'PaymentNotSettled', nonRetryable: true });
    }
    if (p.payer !== input.payer || p.amount_tinybars.toString() !== input.amountTinybars) {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} does not match the request`, type: 'PaymentMismatch', nonRetryable: true });
    }
    return { status: p.status };
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

  return { confirmSettlement, recordPassport, recordUpgrade, markRevoked };
}

export type PassportDbActivities = ReturnType<typeof createPassportDbActivities>;
