/**
 * Upgrading a passport in place (POST /passport/{tokenId}/{serial}/upgrade; DESIGN.md 5 and 6,
 * issue 23): the same saga as issuance (issuance.ts), for the price difference. The route
 * authenticates, checks who holds the passport on the ledger and the tier (domain/tiers.ts
 * tierRefusal), and runs the x402 gate; this module decides and orchestrates:
 *
 *   1. prepareUpgrade, before any payment: whether the request's payment already paid for this
 *      upgrade (attach), one pending upgrade per passport, a move strictly up (upgradeRefusal);
 *   2. upgrade: the verified payment recorded with the claim, the passportUpgrade workflow (which
 *      settles, then rewrites the metadata) run through claims.ts runClaimed, the answer.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { publicBase } from '../context.js';
import { ApiError } from '../errors.js';
import type { PaymentTerms } from '../plugins/x402.js';
import { scopedWorkflowId } from '../workflowSettings.js';
import { hashScanLink, notFound, passportLinks, refusePassport } from './views.js';
import { passportChanged } from './cache.js';
import { executionFailed, outcomeOfRow, replayedPayment, settlementFailed } from './outcomes.js';
import { paymentRecordOf, paymentRefOf, paymentResponse, paymentTransactionIdOf, refund, releasedStaleClaim, runClaimed, undelivered, verifiedPaymentRef } from './claims.js';
import type { Passports } from './state.js';
import { tierEntry, upgradePriceTinybars, upgradeRefusal, type Tier } from '../../domain/tiers.js';
import { findPaymentByTransactionId } from '../../db/queries/payments.js';
import { findPendingUpgrade, findUpgrade, recordUpgradePayment, type PassportRow, type UpgradeRow } from '../../db/queries/passports.js';
import type { PaymentRef } from '../../workflows/contracts/passport.js';
import { passportUpgradeContract, passportUpgradeWorkflowId, type PassportUpgradeInput } from '../../workflows/contracts/passportUpgrade.js';

/** The move asked for (from the passport's tier to the requested one), its price, and an earlier request's claim to attach to. */
export interface UpgradePlan {
  passport: PassportRow;
  oldTier: Tier;
  newTier: Tier;
  price: bigint;
  attach?: UpgradeRow;
}

interface UpgradedView {
  tokenId: string;
  serialNumber: number;
  did: string;
  capabilities: string[];
  accountId: string;
  oldTier: string;
  newTier: string;
  price: string;
}

const WHAT = 'The upgrade could not be applied';

/** Where an upgrade is polled: the passport. */
const passportUrl = (tokenId: string, serial: number | bigint) => `/passport/${tokenId}/${serial}`;

function upgradeResponse(p: Passports, request: FastifyRequest, r: UpgradedView) {
  return {
    upgraded: true as const,
    tokenId: r.tokenId,
    serialNumber: r.serialNumber,
    did: r.did,
    oldTier: r.oldTier,
    newTier: r.newTier,
    tier: r.newTier,
    capabilities: r.capabilities,
    pricePaidTinybars: r.price,
    hashScanLink: hashScanLink(p.network, publicBase(p.ctx, request), r.tokenId, r.serialNumber),
    _links: passportLinks(r.tokenId, r.serialNumber, r.did, r.accountId),
  };
}

/** The x402 terms of an upgrade: the price difference to the deployment's payTo. */
export function upgradeTerms(p: Passports, plan: UpgradePlan): PaymentTerms {
  return { amountTinybars: plan.price, payTo: p.ledger.deployment.payTo, description: `Passport upgrade ${plan.oldTier} -> ${plan.newTier}` };
}

/**
 * Before any payment: whether this request's payment already paid for this upgrade (attach), else
 * the refusals that must come before money moves (one pending upgrade per passport, a priced move).
 */
export async function prepareUpgrade(p: Passports, request: FastifyRequest, auth: { accountId: string }, passport: PassportRow, requested: Tier): Promise<UpgradePlan> {
  const oldTier = passport.tier as Tier;
  const paymentTransactionId = paymentTransactionIdOf(request);
  if (paymentTransactionId) {
    const earlier = await findUpgrade(p.sql, paymentTransactionId);
    if (earlier) {
      if (earlier.account_id !== auth.accountId || earlier.token_id !== passport.token_id || Number(earlier.serial) !== Number(passport.serial) || earlier.new_tier !== requested) throw replayedPayment();
      return { passport, oldTier: earlier.old_tier as Tier, newTier: requested, price: 0n, attach: earlier };
    }
  }
  // one upgrade of a passport at a time, refused before any money moves (like issuance)
  const pendingUpgrade = await findPendingUpgrade(p.sql, passport.token_id, passport.serial);
  if (pendingUpgrade && !(await releasedStaleClaim(p, pendingUpgrade, passportUrl(passport.token_id, passport.serial)))) {
    throw new ApiError('passport_upgrade_not_eligible', `An upgrade of passport ${passport.token_id}/${passport.serial} to ${pendingUpgrade.new_tier} is in progress`, {
      hint: `Poll GET /passport/${passport.token_id}/${passport.serial} until it shows the new tier, then request a higher one if needed`,
    });
  }
  refusePassport(upgradeRefusal(oldTier, requested));
  return { passport, oldTier, newTier: requested, price: upgradePriceTinybars(oldTier, requested)! };
}

/** The paid upgrade: record the verified payment with the claim, start the workflow (which settles), answer. */
export async function upgrade(p: Passports, request: FastifyRequest, reply: FastifyReply, auth: { accountId: string }, plan: UpgradePlan) {
  const { passport } = plan;
  if (plan.attach) return resumeUpgrade(p, request, reply, plan.attach, passport);
  const serial = Number(passport.serial);
  const verified = request.verifiedPayment!;
  p.killPoint('after-verify');
  const recorded = await recordUpgradePayment(p.sql, paymentRecordOf(verified), {
    paymentTransactionId: verified.transactionId,
    workflowId: scopedWorkflowId(p.settings, passportUpgradeWorkflowId(passport.token_id, serial, plan.newTier)),
    tokenId: passport.token_id,
    serial,
    accountId: auth.accountId,
    oldTier: plan.oldTier,
    newTier: plan.newTier,
  });
  if (recorded.outcome === 'replayed') throw replayedPayment();
  if (recorded.outcome === 'refused') {
    const nothing = `Nothing was charged: payment ${verified.transactionId} was not settled.`;
    if (recorded.reason === 'passport_not_found') {
      const e = notFound(passport.token_id, serial);
      throw new ApiError(e.code, e.message, { hint: `${e.hint ?? ''} ${nothing}`.trim() });
    }
    throw new ApiError('passport_upgrade_not_eligible', recorded.reason === 'request_pending' ? 'Another upgrade of this passport is in progress' : 'The passport changed tier meanwhile', {
      hint: `Read GET /passport/${passport.token_id}/${serial} and choose a tier above its current one. ${nothing}`,
    });
  }
  if (recorded.outcome === 'earlier' || recorded.row.status === 'upgraded') return resumeUpgrade(p, request, reply, recorded.row, passport);
  p.killPoint('after-record');
  return runUpgrade(p, request, reply, recorded.row, passport, verifiedPaymentRef(verified));
}

/** Runs the claimed upgrade's workflow and answers the passport at its new tier. */
async function runUpgrade(p: Passports, request: FastifyRequest, reply: FastifyReply, row: UpgradeRow, passport: PassportRow, payment: PaymentRef) {
  const newTier = row.new_tier as Tier;
  const input: PassportUpgradeInput = {
    tokenId: row.token_id,
    serial: Number(row.serial),
    accountId: row.account_id,
    did: passport.did,
    oldTier: row.old_tier as Tier,
    newTier,
    capabilities: [...tierEntry(newTier).capabilities],
    payment,
    ...(p.settings.timings ? { timings: p.settings.timings } : {}),
  };
  const claim = { paymentTransactionId: row.payment_transaction_id, workflowId: row.workflow_id };
  const r = await runClaimed(p, reply, passportUpgradeContract, claim, input, { what: WHAT, pollUrl: passportUrl(row.token_id, row.serial) });
  await passportChanged(p.sql, row.token_id, row.serial);
  if (r.status !== 'upgraded') return undelivered(p, WHAT, payment.transactionId, r, 'metadata update', request.verifiedPayment?.refusal);
  await paymentResponse(p, reply, payment.transactionId);
  return upgradeResponse(p, request, { ...r, accountId: row.account_id, price: payment.amountTinybars });
}

/** The outcome of an upgrade an earlier request already claimed with this payment. */
async function resumeUpgrade(p: Passports, request: FastifyRequest, reply: FastifyReply, row: UpgradeRow, passport: PassportRow) {
  const payment = await findPaymentByTransactionId(p.sql, row.payment_transaction_id);
  if (!payment) throw replayedPayment();
  const ref = paymentRefOf(payment, request);
  if (row.status === 'upgraded') {
    await paymentResponse(p, reply, row.payment_transaction_id);
    return upgradeResponse(p, request, { tokenId: row.token_id, serialNumber: Number(passport.serial), did: passport.did, oldTier: row.old_tier, newTier: row.new_tier, capabilities: passport.capabilities, accountId: row.account_id, price: ref.amountTinybars });
  }
  if (row.status === 'pending') return runUpgrade(p, request, reply, row, passport, ref);
  const failedStep = row.failed_step;
  if (failedStep === 'settle' && row.status === 'failed') throw settlementFailed(row.payment_transaction_id, row.error ?? 'the payment did not settle');
  if (row.status === 'failed' || (failedStep && row.status === 'refunded')) {
    throw executionFailed(WHAT, row.payment_transaction_id, failedStep ?? 'confirmSettlement', row.error, outcomeOfRow(row, payment.status));
  }
  if (failedStep) throw executionFailed(WHAT, row.payment_transaction_id, failedStep, row.error, await refund(p, row.payment_transaction_id, row.error ?? failedStep, passportUrl(row.token_id, row.serial)));
  throw replayedPayment();
}
