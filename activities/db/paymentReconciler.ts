/**
 * Database activities of the paymentReconciler workflow (issue 23): the payments without an outcome
 * after the bound, and the request a payment claimed, read back from its claim row so a stopped
 * issuance or upgrade can be run again with exactly what its request recorded (never with what a
 * workflow input says).
 */
import type { Sql } from 'postgres';
import { findPaymentByTransactionId, listUnfinishedPayments as listUnfinished, type UnfinishedPayment } from '../../db/queries/payments.js';
import { findIssuance, findPassport, findUpgrade } from '../../db/queries/passports.js';
import { isTier, tierEntry, type Tier } from '../../domain/tiers.js';
import type { Capability } from '../../domain/capabilities.js';

interface PaymentRef {
  transactionId: string;
  payer: string;
  amountTinybars: string;
}

/** A pending request as its claim recorded it (the reconciler builds the workflow input from it). */
export type ClaimedRequest =
  | { kind: 'issuance'; workflowId: string; network: string; accountId: string; did: string; tier: Tier; capabilities: Capability[]; endpoint: string | null; payment: PaymentRef }
  | { kind: 'upgrade'; workflowId: string; tokenId: string; serial: number; accountId: string; did: string; oldTier: Tier; newTier: Tier; capabilities: Capability[]; payment: PaymentRef };

export function createPaymentReconcilerActivities(deps: { sql: Sql }) {
  const { sql } = deps;

  /** Payments recorded more than `olderThanMs` ago with neither a passport (or upgrade), a refund, nor a failure. */
  async function listUnfinishedPayments(input: { olderThanMs: number; limit: number }): Promise<UnfinishedPayment[]> {
    return listUnfinished(sql, input.olderThanMs, input.limit);
  }

  /** The pending request the payment claimed, or null when its claim is not pending (or there is none). */
  async function claimedRequest(input: { paymentTransactionId: string }): Promise<ClaimedRequest | null> {
    const p = await findPaymentByTransactionId(sql, input.paymentTransactionId);
    if (!p) return null;
    const payment = { transactionId: p.transaction_id, payer: p.payer, amountTinybars: p.amount_tinybars.toString() };
    const issuance = await findIssuance(sql, input.paymentTransactionId);
    if (issuance) {
      if (issuance.status !== 'pending' || !isTier(issuance.tier)) return null;
      return {
        kind: 'issuance',
        workflowId: issuance.workflow_id,
        network: issuance.network,
        accountId: issuance.account_id,
        did: issuance.did,
        tier: issuance.tier,
        capabilities: issuance.capabilities as Capability[],
        endpoint: issuance.endpoint,
        payment,
      };
    }
    const upgrade = await findUpgrade(sql, input.paymentTransactionId);
    if (!upgrade || upgrade.status !== 'pending' || !isTier(upgrade.old_tier) || !isTier(upgrade.new_tier)) return null;
    const passport = await findPassport(sql, upgrade.token_id, upgrade.serial);
    if (!passport) return null;
    return {
      kind: 'upgrade',
      workflowId: upgrade.workflow_id,
      tokenId: upgrade.token_id,
      serial: Number(upgrade.serial),
      accountId: upgrade.account_id,
      did: passport.did,
      oldTier: upgrade.old_tier,
      newTier: upgrade.new_tier,
      capabilities: [...tierEntry(upgrade.new_tier).capabilities],
      payment,
    };
  }

  return { listUnfinishedPayments, claimedRequest };
}

export type PaymentReconcilerActivities = ReturnType<typeof createPaymentReconcilerActivities>;
