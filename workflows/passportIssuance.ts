/**
 * passportIssuance (id passport:{network}:{accountId}). The API verified the x402 payment and recorded
 * it with its claim of the account before starting it; no money moved yet (issue 23).
 *
 *   settlePayment (through the facilitator, the payment re-checked against the claim and the catalog;
 *   a settlement that fails for good releases the claim: status 'released', failedStep 'settle',
 *   nothing taken) -> confirmSettlement -> mintPassport (to the treasury, idempotent per payment)
 *   (confirmSettlement refusing: the payment is refunded, or the claim released when no settled
 *   payment exists; the result says which, failedStep 'confirmSettlement')
 *   -> deliverPassport (treasury -> owner) -> setPassportFrozen (the holder's relationship, so the
 *   passport cannot be transferred) -> publishAudit (passport.issued) -> recordPassport
 *
 * Saga: when the mint or the delivery fails for good (a final ledger status, or the bounded retries
 * are used up) the payment is refunded (refundPayment) and the result says so; the API answers 502
 * execution_failed with the refund transaction. A passport minted but never delivered is burned
 * first (burnUndeliveredPassport), so the treasury keeps no orphan NFT.
 *
 * Histories recorded before issue 23 (the API had settled) start with confirmSettlement; the settle
 * step is behind patched(SETTLE_IN_WORKFLOW_PATCH).
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import { confirmSettlementOrUndo, failureReason, isActivityFailure, issuanceTerms, passportActivities, settleOrUndo, SETTLE_IN_WORKFLOW_PATCH } from './passportCommon.js';
import { requireBoundStart } from './binding.js';
import type { PassportIssuanceInput, PassportIssuanceResult } from './contracts/passportIssuance.js';

export async function passportIssuance(input: PassportIssuanceInput): Promise<PassportIssuanceResult> {
  // an input written for another workflow starts nothing; the run acts on its own claim only (issue 26)
  requireBoundStart(input, 'passportIssuance');
  const { steps, durable } = passportActivities(input.timings);
  const payment = input.payment;
  const terms = await issuanceTerms(durable, input);
  if (patched(SETTLE_IN_WORKFLOW_PATCH)) {
    const unsettled = await settleOrUndo(durable, payment);
    if (unsettled) return unsettled;
  }
  const unconfirmed = await confirmSettlementOrUndo(durable, payment);
  if (unconfirmed) return unconfirmed;

  // idempotency keys are per payment: a later issuance for the same wallet (after a revocation)
  // runs under the same workflow id but pays with another payment
  const keyBase = `${workflowInfo().workflowId}/${payment.transactionId}`;
  let step: 'mint' | 'deliver' = 'mint';
  let minted: { tokenId: string; serial: number; transactionId: string } | undefined;
  let delivered: { transactionId: string };
  try {
    minted = await steps.mintPassport({ idempotencyKey: `${keyBase}/mint`, tier: terms.tier, capabilities: terms.capabilities });
    step = 'deliver';
    delivered = await steps.deliverPassport({ idempotencyKey: `${keyBase}/deliver`, serial: minted.serial, to: terms.accountId });
  } catch (err) {
    if (!isActivityFailure(err)) throw err;
    const reason = `${step} failed: ${failureReason(err)}`;
    if (minted) await durable.burnUndeliveredPassport({ idempotencyKey: `${keyBase}/burn`, serial: minted.serial });
    const refund = await durable.refundPayment({ paymentTransactionId: payment.transactionId, reason, failedStep: step });
    return { status: 'refunded', failedStep: step, reason, refundTransactionId: refund.refundTransactionId };
  }
  // Non-transferable: freeze the holder's relationship with the collection right after delivery
  // (histories recorded before this step replay without it). A collection without a freeze key
  // answers a final status, which does not undo a paid, delivered passport.
  if (patched('passport-freeze-holder')) {
    await durable.setPassportFrozen({ idempotencyKey: `${keyBase}/freeze`, accountId: terms.accountId, frozen: true });
  }

  const issuedAt = Date.now(); // workflow time: deterministic on replay
  const audit = await durable.publishAudit({
    idempotencyKey: `${keyBase}/audit`,
    event: { v: 1, type: 'passport.issued', did: terms.did, tokenId: minted.tokenId, serial: minted.serial, tier: terms.tier, timestamp: issuedAt },
  });
  const recorded = await durable.recordPassport({
    network: terms.network,
    tokenId: minted.tokenId,
    serial: minted.serial,
    accountId: terms.accountId,
    did: terms.did,
    tier: terms.tier,
    capabilities: terms.capabilities,
    endpoint: terms.endpoint,
    issuedAtMs: issuedAt,
    paymentTransactionId: payment.transactionId,
    mintTransactionId: minted.transactionId,
    deliverTransactionId: delivered.transactionId,
    workflowId: workflowInfo().workflowId,
  });
  return {
    status: 'issued',
    tokenId: minted.tokenId,
    serialNumber: minted.serial,
    did: terms.did,
    accountId: terms.accountId,
    tier: terms.tier,
    capabilities: terms.capabilities,
    issuedAt: recorded.issuedAt,
    mintTransactionId: minted.transactionId,
    deliverTransactionId: delivered.transactionId,
    auditTransactionId: audit.transactionId,
  };
}
