// The two halves of an x402 `exact` HBAR payment that both the API (its 402 terms and its verify) and
// the worker (the settlement inside the passport workflows, issue 23) need, written once:
//  - the requirements of a payment (scheme, network, asset, amount, payTo, feePayer);
//  - one settle call through a facilitator, with its answer sorted into settled / retry / failed and
//    normalised to our own ids (ledger/x402/ids.ts), whatever form the facilitator answered in.
import type { FacilitatorClient } from '@x402/core/server';
import type { PaymentPayload, PaymentRequirements, SettleResponse } from '@x402/core/types';
import { RETRYABLE_STATUSES } from '../errors.js';
import { normalizePayer, normalizeTransactionId } from './ids.js';
import { EXACT_SCHEME, HBAR_ASSET } from '@agent-passport/core/x402/network';
import { withSpan } from '../../telemetry/spans.js';

/** The payer has this long to get a payment settled (x402 maxTimeoutSeconds). */
export const PAYMENT_TIMEOUT_SECONDS = 180;

export function exactHbarRequirements(p: { network: string; amountTinybars: bigint; payTo: string; feePayer: string; maxTimeoutSeconds?: number }): PaymentRequirements {
  return {
    scheme: EXACT_SCHEME,
    network: p.network as PaymentRequirements['network'],
    asset: HBAR_ASSET,
    amount: p.amountTinybars.toString(),
    payTo: p.payTo,
    maxTimeoutSeconds: p.maxTimeoutSeconds ?? PAYMENT_TIMEOUT_SECONDS,
    extra: { feePayer: p.feePayer },
  };
}

/** The fee payer a facilitator advertises for `exact` on `network` (GET /supported); throws when none. */
export async function facilitatorFeePayer(facilitator: FacilitatorClient, network: string): Promise<string> {
  const s = await facilitator.getSupported();
  const kind = s.kinds.find((k) => k.x402Version === 2 && k.scheme === EXACT_SCHEME && k.network === network);
  const feePayer = (kind?.extra as { feePayer?: unknown } | undefined)?.feePayer;
  if (typeof feePayer !== 'string') throw new Error(`facilitator does not support exact on ${network}`);
  return feePayer;
}

export type SettleOutcome =
  /** the ledger took the payment; `response` names our transaction id and payer */
  | { kind: 'settled'; response: SettleResponse; settledAs: { transaction: string | null; payer: string | null } }
  /** the outcome is not known (facilitator unreachable, settlement pending, a transient ledger status): settle again */
  | { kind: 'retry'; reason: string }
  /** the facilitator refused for good (expired, insufficient balance, invalid): before concluding, check the ledger */
  | { kind: 'failed'; reason: string; message: string };

/** Facilitator reasons after which the same payment may still settle. */
const RETRY_REASONS = new Set(['settle_pending', 'payer_key_unavailable', 'transaction_not_yet_valid']);

/**
 * Settles `payload` against `requirements` (the requirements WE built, never the client's copy:
 * `accepted` is replaced by them) and sorts the answer. `ids` are the payment's own normalised
 * transaction id and payer, which the settled answer is rewritten to.
 */
export async function settleExact(
  facilitator: FacilitatorClient,
  payload: PaymentPayload,
  requirements: PaymentRequirements,
  ids: { transactionId: string; payer: string },
): Promise<SettleOutcome> {
  let settlement: SettleResponse;
  try {
    settlement = await withSpan('x402 settle', { 'x402.network': requirements.network }, () => facilitator.settle({ ...payload, accepted: requirements }, requirements));
  } catch (err) {
    return { kind: 'retry', reason: `facilitator unreachable: ${(err as Error).message}`.slice(0, 300) };
  }
  if (!settlement.success) {
    const reason = settlement.errorReason ?? 'unknown';
    if (RETRY_REASONS.has(reason) || RETRYABLE_STATUSES.has(reason.toUpperCase())) return { kind: 'retry', reason };
    return { kind: 'failed', reason, message: settlement.errorMessage ?? reason };
  }
  return {
    kind: 'settled',
    response: { ...settlement, transaction: ids.transactionId, payer: ids.payer },
    settledAs: { transaction: normalizeTransactionId(settlement.transaction), payer: normalizePayer(settlement.payer) },
  };
}
