/**
 * settlePayment: the first step of the passport issuance and upgrade workflows (issue 23). The API
 * verified the x402 payment and recorded it ('verified') with its request's claim before starting the
 * workflow; no money moved before this activity. It never trusts its input: the terms are rebuilt
 * from the claim and the catalog (amount, payTo, network), the recorded payment must match them, and
 * the signed transfer (the PAYMENT-SIGNATURE the request carried) is checked again against them
 * (ledger/x402/verifyPayment.ts: a plain transfer, exactly the amount to payTo, one payer = the
 * recorded payer, the payer's signature, not expired) before the facilitator is asked to settle.
 *
 * Idempotent: a payment already settled (recorded, or found on the ledger) answers at once, and the
 * facilitator's settle is itself idempotent per transaction. The outcome on the ledger is the judge:
 * a payment is declared failed (status 'failed', nothing moved) only when the ledger shows it failed,
 * or its transaction can no longer reach consensus (its validity window is over) and neither the node
 * (receipt) nor the mirror knows it. Otherwise the failure is retryable and Temporal retries.
 *
 * Final failures (non-retryable ApplicationFailures): PaymentNotFound, PaymentMismatch (the record or
 * the bytes do not match the request), PaymentNotSettled (refunded or failed before, or no pending
 * request), PaymentSettlementFailed (nothing moved and nothing ever will).
 */
import { ApplicationFailure } from '@temporalio/activity';
import { HTTPFacilitatorClient, type FacilitatorClient } from '@x402/core/server';
import { decodePaymentSignatureHeader } from '@x402/core/http';
import type { PaymentPayload, SettleResponse } from '@x402/core/types';
import type { Sql } from 'postgres';
import { tierPriceTinybars, upgradePriceTinybars, isTier } from '../../domain/tiers.js';
import { findPaymentByTransactionId, markPaymentFailedIfVerified, markPaymentSettledIfVerified, type PaymentRow } from '../../db/queries/payments.js';
import { findIssuance, findUpgrade } from '../../db/queries/passports.js';
import { publicKeyFromMirror } from '@agent-passport/core/keys';
import { queryReceipt } from '../../ledger/operations.js';
import { normalizeTransactionId } from '../../ledger/x402/ids.js';
import { x402NetworkId } from '@agent-passport/core/x402/network';
import { exactHbarRequirements, facilitatorFeePayer, PAYMENT_TIMEOUT_SECONDS, settleExact } from '../../ledger/x402/settle.js';
import { paymentTransactionOf, verifyDecodedTransaction } from '../../ledger/x402/verifyPayment.js';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';
import type { LedgerServices } from '../../ledger/services.js';

export interface SettlePaymentInput {
  paymentTransactionId: string;
  /**
   * The PAYMENT-SIGNATURE header of the request (base64 JSON holding the payer-signed transfer; no
   * key). Absent in a run started without it (the payment reconciler): such a run can only find the
   * payment settled already, or declare it dead once its validity window is over.
   */
  paymentSignature?: string;
}

export interface SettlePaymentResult {
  transactionId: string;
  payer: string;
  amountTinybars: string;
  /** how the settlement became known: settled now by the facilitator, recorded before, or found on the ledger */
  via: 'facilitator' | 'recorded' | 'ledger';
}

/** After the end of a transaction's validity window, how long the node and mirror may still be catching up. */
const LEDGER_SETTLE_MARGIN_MS = 15_000;

const final = (type: string, message: string) => ApplicationFailure.create({ type, message, nonRetryable: true });
const retryable = (type: string, message: string) => ApplicationFailure.create({ type, message, nonRetryable: false });

/** The valid start of a transaction id (0.0.x@seconds.nanos) in ms, or null. */
function validStartMs(transactionId: string): number | null {
  const m = /@(\d+)\.(\d+)$/.exec(transactionId);
  return m ? Number(m[1]) * 1000 + Math.floor(Number(m[2]) / 1e6) : null;
}

export function createPaymentSettlementActivities(deps: { sql: Sql; ledger: LedgerServices; facilitator?: FacilitatorClient; now?: () => number }) {
  const { sql } = deps;
  const { deployment, mirror, client } = deps.ledger;
  const now = deps.now ?? (() => Date.now());
  const network = x402NetworkId(deployment.network);
  let facilitator: FacilitatorClient | undefined = deps.facilitator;
  let feePayer: Promise<string> | undefined;

  const facilitatorClient = (): FacilitatorClient => {
    if (facilitator) return facilitator;
    if (!deployment.facilitatorUrl) throw final('PaymentSettlementUnavailable', 'the deployment names no x402 facilitator (facilitatorUrl)');
    facilitator = new HTTPFacilitatorClient({ url: deployment.facilitatorUrl, timeoutMs: 60_000 });
    return facilitator;
  };
  const feePayerOf = (): Promise<string> => {
    feePayer ??= facilitatorFeePayer(facilitatorClient(), network).catch((err: unknown) => {
      feePayer = undefined;
      throw retryable('PaymentSettlementPending', `the facilitator's fee payer could not be read: ${(err as Error).message}`);
    });
    return feePayer;
  };

  /** The amount the request this payment claimed costs, from the catalog; a final failure when there is no pending request. */
  async function expectedAmount(transactionId: string): Promise<bigint> {
    const issuance = await findIssuance(sql, transactionId);
    if (issuance) {
      if (issuance.status !== 'pending') throw final('PaymentNotSettled', `the issuance paid by ${transactionId} is ${issuance.status}, not pending`);
      if (!isTier(issuance.tier)) throw final('PaymentMismatch', `the issuance paid by ${transactionId} names no known tier`);
      return tierPriceTinybars(issuance.tier);
    }
    const upgrade = await findUpgrade(sql, transactionId);
    if (upgrade) {
      if (upgrade.status !== 'pending') throw final('PaymentNotSettled', `the upgrade paid by ${transactionId} is ${upgrade.status}, not pending`);
      const price = isTier(upgrade.old_tier) && isTier(upgrade.new_tier) ? upgradePriceTinybars(upgrade.old_tier, upgrade.new_tier) : null;
      if (price === null) throw final('PaymentMismatch', `the upgrade paid by ${transactionId} is not a priced move`);
      return price;
    }
    throw final('PaymentNotSettled', `no request claims payment ${transactionId}`);
  }

  /**
   * What the ledger knows of the payment transaction: the mirror (whose transfers must be exactly the
   * payment's: payer -amount, payTo +amount), else the node's receipt (recent transactions).
   */
  async function ledgerOutcome(p: PaymentRow): Promise<'success' | 'unknown' | { failed: string }> {
    const transactionId = p.transaction_id;
    try {
      const onMirror = await mirror.getTransaction(transactionId);
      if (onMirror?.result === 'SUCCESS') {
        const net = (account: string) => (onMirror.transfers ?? []).filter((t) => t.account === account).reduce((s, t) => s + BigInt(t.amount), 0n);
        const amount = BigInt(p.amount_tinybars);
        if (net(p.payer) === -amount && net(p.pay_to) === amount) return 'success';
        // never "nothing moved": something did, just not this payment; an operator must look
        throw final('PaymentMismatch', `transaction ${transactionId} succeeded on the ledger with other transfers than payment ${transactionId}`);
      }
      if (onMirror?.result) return { failed: onMirror.result };
      const receipt = await queryReceipt(client, transactionId, { timeoutMs: 5_000, maxAttempts: 2 });
      return receipt.found ? 'success' : 'unknown';
    } catch (err) {
      if (err instanceof ApplicationFailure) throw err;
      const le = err instanceof LedgerError ? err : toLedgerError(err);
      if (le.phase === 'receipt' && !le.retryable) return { failed: le.status };
      throw retryable('PaymentSettlementPending', `the ledger could not be asked about ${transactionId}: ${le.status}`);
    }
  }

  async function recordSettled(p: PaymentRow, response: SettleResponse, via: SettlePaymentResult['via']): Promise<SettlePaymentResult> {
    if (!(await markPaymentSettledIfVerified(sql, p.transaction_id, response as unknown as Record<string, unknown>))) {
      // another run recorded it first (settled), or it moved on (refunded): confirmSettlement decides the rest
      const after = await findPaymentByTransactionId(sql, p.transaction_id);
      if (after?.status !== 'settled') throw final('PaymentNotSettled', `payment ${p.transaction_id} is ${after?.status ?? 'gone'} after its settlement`);
    }
    return { transactionId: p.transaction_id, payer: p.payer, amountTinybars: p.amount_tinybars.toString(), via };
  }

  /** Nothing moved and nothing ever will: the payment is 'failed' and the request ends with nothing taken. */
  async function dead(p: PaymentRow, reason: string): Promise<never> {
    await markPaymentFailedIfVerified(sql, p.transaction_id);
    throw final('PaymentSettlementFailed', `payment ${p.transaction_id} was not settled: ${reason}`);
  }

  /** The ledger decides a payment the facilitator could not settle: taken after all, dead, or not known yet (retry). */
  async function judgeByLedger(p: PaymentRow, reason: string, validUntilMs: number | null): Promise<SettlePaymentResult> {
    const outcome = await ledgerOutcome(p);
    const base = { transaction: p.transaction_id, payer: p.payer, network, success: true } as SettleResponse;
    if (outcome === 'success') return recordSettled(p, base, 'ledger');
    if (outcome !== 'unknown') return dead(p, `${reason} (the ledger shows ${outcome.failed})`);
    const end = validUntilMs ?? (validStartMs(p.transaction_id) ?? 0) + PAYMENT_TIMEOUT_SECONDS * 1000;
    if (now() > end + LEDGER_SETTLE_MARGIN_MS) return dead(p, reason);
    throw retryable('PaymentSettlementPending', `payment ${p.transaction_id}: ${reason}; it may still reach the ledger until ${new Date(end).toISOString()}`);
  }

  async function settlePayment(input: SettlePaymentInput): Promise<SettlePaymentResult> {
    const id = input.paymentTransactionId;
    const p = await findPaymentByTransactionId(sql, id);
    if (!p) throw final('PaymentNotFound', `payment ${id} is not recorded`);
    if (p.status === 'settled') return { transactionId: id, payer: p.payer, amountTinybars: p.amount_tinybars.toString(), via: 'recorded' };
    if (p.status !== 'verified') throw final('PaymentNotSettled', `payment ${id} is ${p.status}`);

    // the terms, rebuilt from the request's claim and the catalog; the record must match them
    const amount = await expectedAmount(id);
    if (BigInt(p.amount_tinybars) !== amount || p.pay_to !== deployment.payTo || p.network !== network) {
      throw final('PaymentMismatch', `payment ${id} (${p.amount_tinybars} tinybars to ${p.pay_to} on ${p.network}) does not match its request (${amount} to ${deployment.payTo} on ${network})`);
    }
    const validUntilMs = p.valid_until ? p.valid_until.getTime() : null;
    if (!input.paymentSignature) return judgeByLedger(p, 'no signed payment to settle', validUntilMs);

    let payload: PaymentPayload;
    try {
      payload = decodePaymentSignatureHeader(input.paymentSignature);
    } catch {
      throw final('PaymentMismatch', `the signed payment of ${id} cannot be decoded`);
    }
    const tx = paymentTransactionOf(payload);
    if (!tx || normalizeTransactionId(tx.transactionId?.toString()) !== id) throw final('PaymentMismatch', `the signed payment is not transaction ${id}`);

    const payTo = deployment.payTo;
    const requirements = exactHbarRequirements({ network, amountTinybars: amount, payTo, feePayer: await feePayerOf() });
    const checked = await verifyDecodedTransaction(tx, requirements, { feePayer: requirements.extra!.feePayer as string, network }, {
      now,
      isSeen: async () => false, // the payments table is the replay guard: this payment is recorded for this request
      getPayerPublicKey: async (accountId) => {
        const account = await mirror.getAccount(accountId).catch(() => {
          throw retryable('PaymentSettlementPending', `the mirror could not be read for the key of ${accountId}`);
        });
        return account && !account.deleted ? publicKeyFromMirror(account.key) : null;
      },
    });
    if (!checked.isValid) {
      if (checked.invalidReason === 'payer_key_unavailable' || checked.invalidReason === 'transaction_not_yet_valid') {
        throw retryable('PaymentSettlementPending', `payment ${id}: ${checked.invalidReason}`);
      }
      // expired: the ledger decides (an earlier attempt may have settled it); anything else never settles
      if (checked.invalidReason === 'transaction_expired') return judgeByLedger(p, 'transaction_expired', validUntilMs);
      const outcome = await ledgerOutcome(p);
      if (outcome === 'success') return recordSettled(p, { transaction: id, payer: p.payer, network, success: true } as SettleResponse, 'ledger');
      return dead(p, `${checked.invalidReason}: ${checked.invalidMessage}`);
    }
    if (checked.payer !== p.payer) throw final('PaymentMismatch', `payment ${id} is paid by ${checked.payer}, recorded as paid by ${p.payer}`);

    const outcome = await settleExact(facilitatorClient(), payload, requirements, { transactionId: id, payer: p.payer });
    if (outcome.kind === 'settled') return recordSettled(p, outcome.response, 'facilitator');
    if (outcome.kind === 'retry') {
      const end = validUntilMs ?? checked.payment.validUntil.getTime();
      if (now() > end + LEDGER_SETTLE_MARGIN_MS) return judgeByLedger(p, outcome.reason, end);
      throw retryable('PaymentSettlementPending', `payment ${id}: ${outcome.reason}`);
    }
    // a refusal: final only once the ledger agrees nothing moved
    const onLedger = await ledgerOutcome(p);
    if (onLedger === 'success') return recordSettled(p, { transaction: id, payer: p.payer, network, success: true } as SettleResponse, 'ledger');
    return dead(p, `${outcome.reason}: ${outcome.message}`);
  }

  return { settlePayment };
}

export type PaymentSettlementActivities = ReturnType<typeof createPaymentSettlementActivities>;
