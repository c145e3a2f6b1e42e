/**
 * Ledger activities of the passport workflows: thin wrappers over ledger/ (operations builders +
 * IdempotentSubmitter, so a retried activity never applies a write twice). Final ledger errors
 * become non-retryable ApplicationFailures of type `LedgerError.<STATUS>`; everything else is
 * retried by Temporal with the workflow's bounded backoff. No key material enters or leaves here:
 * the service's keys live in the worker's SDK client (operator) only.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { encodePassportMetadata } from '../../domain/passportMetadata.js';
import type { Capability } from '../../domain/capabilities.js';
import type { Tier } from '../../domain/tiers.js';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';
import { ledgerCall } from './ledgerCall.js';
import {
  buildBurnNft,
  buildFreezeAccount,
  buildHbarTransfer,
  buildMintNft,
  buildNftTransfer,
  buildTopicMessage,
  buildUpdateNftMetadata,
  buildWipeNft,
} from '../../ledger/operations.js';
import { findPaymentByTransactionId, markPaymentFailedIfVerified, markPaymentRefunded } from '../../db/queries/payments.js';
import { markRequestRefunded, requestClaimOfPayment, type RequestFailedStep } from '../../db/queries/passports.js';
import { callerRunId } from '../callerRun.js';
import { requireOwnClaimFor, sameTerms } from '../ownClaim.js';
import { recordAuditEvents } from '../../db/queries/auditEvents.js';
import { parseAuditMessage } from '../../domain/auditEvents.js';
import type { AuditMessage } from '../../workflows/contracts/passport.js';
import type { LedgerServices } from '../../ledger/services.js';

export interface MintPassportInput {
  idempotencyKey: string;
  tier: Tier;
  capabilities: Capability[];
}

export interface NftRef {
  tokenId: string;
  serial: number;
  transactionId: string;
}

export function createPassportLedgerActivities(deps: { sql: Sql; ledger: LedgerServices }) {
  const { deployment, submitter, mirror } = deps.ledger;
  const tokenId = deployment.passportTokenId;

  /** Mints one passport NFT to the treasury with the encoded tier and capabilities. */
  async function mintPassport(input: MintPassportInput): Promise<NftRef> {
    // the supply key signs only the run's own claim's tier and capabilities (issue 26 item 2)
    await requireOwnClaimFor(deps.sql, input.idempotencyKey, (c) =>
      c.kind !== 'issuance' ? 'a mint is for an issuance' : sameTerms(c.tier, c.capabilities, input.tier, input.capabilities),
    );
    const metadata = encodePassportMetadata({ tier: input.tier, capabilities: input.capabilities });
    const r = await ledgerCall('mint', () =>
      submitter.submit({ idempotencyKey: input.idempotencyKey, kind: 'nft_mint', build: () => buildMintNft({ tokenId, metadata: [metadata] }) }),
    );
    const serial = Number(r.receipt.serials?.[0]);
    if (!Number.isSafeInteger(serial) || serial <= 0) {
      throw ApplicationFailure.create({ message: `mint ${r.transactionId} has no serial in its receipt`, type: 'LedgerRetryable' });
    }
    return { tokenId, serial, transactionId: r.transactionId };
  }

  /** Moves the minted passport from the treasury to its owner. */
  async function deliverPassport(input: { idempotencyKey: string; serial: number; to: string }): Promise<{ transactionId: string }> {
    // the treasury delivers only to the run's own claim's account (issue 26 item 2)
    await requireOwnClaimFor(deps.sql, input.idempotencyKey, (c) =>
      c.kind !== 'issuance' ? 'a delivery is for an issuance' : c.accountId === input.to ? null : `${input.to} is not the claim's account`,
    );
    const r = await ledgerCall('deliver', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'nft_transfer',
        build: () => buildNftTransfer({ tokenId, serial: input.serial, from: deployment.treasury, to: input.to }),
      }),
    );
    return { transactionId: r.transactionId };
  }

  /**
   * Freezes (frozen=true, right after delivery) or unfreezes (before a revocation's wipe) the
   * holder's relationship with the passport collection: while frozen, a transfer of the passport
   * fails with ACCOUNT_FROZEN_FOR_TOKEN, so passports are identity, not property. Idempotent per
   * key, and the ledger itself answers SUCCESS to a repeat. A final ledger status (e.g.
   * TOKEN_HAS_NO_FREEZE_KEY for a collection created before freeze keys) is returned, not thrown:
   * the workflow decides; transient errors are retried. With `serial`, the account is the NFT's
   * holder on the ledger (the mirror), falling back to `accountId` when the NFT is gone.
   */
  async function setPassportFrozen(input: { idempotencyKey: string; accountId: string; frozen: boolean; serial?: number; tokenId?: string }): Promise<{ transactionId: string | null; status: string; accountId: string }> {
    const collection = input.tokenId ?? tokenId;
    const holder = input.serial === undefined ? null : await ledgerCall('read NFT', () => mirror.getNftHolder(collection, input.serial!));
    const accountId = holder ?? input.accountId;
    return ledgerCall(input.frozen ? 'freeze' : 'unfreeze', async () => {
      try {
        const r = await submitter.submit({
          idempotencyKey: input.idempotencyKey,
          kind: input.frozen ? 'token_freeze' : 'token_unfreeze',
          build: () => buildFreezeAccount({ tokenId: collection, accountId, frozen: input.frozen }),
        });
        return { transactionId: r.transactionId, status: r.receipt.status, accountId };
      } catch (err) {
        const le = err instanceof LedgerError ? err : toLedgerError(err);
        if (le.retryable) throw le;
        return { transactionId: le.transactionId ?? null, status: le.status, accountId };
      }
    });
  }

  /**
   * Compensation of a delivery that failed for good: burns the minted passport, which is still in
   * the treasury, so no orphan NFT is left behind. Idempotent per key like every ledger write.
   */
  async function burnUndeliveredPassport(input: { idempotencyKey: string; serial: number }): Promise<{ transactionId: string }> {
    const r = await ledgerCall('burn', () =>
      submitter.submit({ idempotencyKey: input.idempotencyKey, kind: 'nft_burn', build: () => buildBurnNft({ tokenId, serials: [input.serial] }) }),
    );
    return { transactionId: r.transactionId };
  }

  /**
   * Submits a versioned JSON audit message to the audit topic, then writes it to the topic's
   * PostgreSQL projection (GET /audit) under its sequence number; the projection's catch-up reader
   * (api/passports/auditProjection.ts) adds the consensus timestamp from the mirror later.
   */
  async function publishAudit(input: { idempotencyKey: string; event: AuditMessage }): Promise<{ transactionId: string; sequenceNumber: number | null }> {
    const message = JSON.stringify(input.event);
    const r = await ledgerCall('audit', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'topic_message',
        build: () => buildTopicMessage({ topicId: deployment.topics.audit, message }),
      }),
    );
    const sequenceNumber = r.receipt.topicSequenceNumber ? Number(r.receipt.topicSequenceNumber) : null;
    const event = sequenceNumber ? parseAuditMessage(message, { sequenceNumber }) : null;
    if (sequenceNumber && event) await recordAuditEvents(deps.sql, deployment.topics.audit, [{ sequenceNumber, consensusTimestamp: null, event }]);
    return { transactionId: r.transactionId, sequenceNumber };
  }

  /**
   * Rewrites the passport's NFT metadata in place (TokenUpdateNfts). `tokenId` names the passport's
   * collection (a passport of the collection before a migration is upgraded in its own collection);
   * histories recorded before it was passed mean the current one.
   */
  async function updatePassportMetadata(input: { idempotencyKey: string; serial: number; tier: Tier; capabilities: Capability[]; tokenId?: string }): Promise<{ transactionId: string }> {
    const collection = input.tokenId ?? tokenId;
    // the metadata key rewrites only the run's own claim's passport, to its tier (issue 26 item 2)
    await requireOwnClaimFor(deps.sql, input.idempotencyKey, (c) =>
      c.kind !== 'upgrade'
        ? 'a metadata update is for an upgrade'
        : c.tokenId !== collection || c.serial !== input.serial
          ? `${collection}/${input.serial} is not the claim's passport`
          : sameTerms(c.newTier, c.capabilities, input.tier, input.capabilities),
    );
    const metadata = encodePassportMetadata({ tier: input.tier, capabilities: input.capabilities });
    const r = await ledgerCall('update metadata', () =>
      submitter.submit({ idempotencyKey: input.idempotencyKey, kind: 'nft_update', build: () => buildUpdateNftMetadata({ tokenId: collection, serials: [input.serial], metadata }) }),
    );
    return { transactionId: r.transactionId };
  }

  /**
   * Wipes the passport from the account holding it (the mirror's current owner, else the recorded
   * owner). An NFT the mirror already shows as deleted counts as wiped. `tokenId` names the
   * passport's collection when it is not the current one (a deployment migrated to a new collection).
   */
  async function wipePassport(input: { idempotencyKey: string; serial: number; accountId: string; tokenId?: string }): Promise<{ transactionId: string | null; wipedFrom: string }> {
    const collection = input.tokenId ?? tokenId;
    const nft = await ledgerCall('read NFT', () => mirror.getNft(collection, input.serial));
    const owner = nft?.account_id ?? input.accountId;
    const r = await ledgerCall('wipe', async () => {
      try {
        return await submitter.submit({ idempotencyKey: input.idempotencyKey, kind: 'nft_wipe', build: () => buildWipeNft({ tokenId: collection, accountId: owner, serials: [input.serial] }) });
      } catch (err) {
        if (nft?.deleted) return null;
        throw err;
      }
    });
    return { transactionId: r?.transactionId ?? null, wipedFrom: owner };
  }

  /**
   * A payment recorded 'verified' (its settlement was never confirmed here) is paid back only when
   * the ledger shows it succeeded. Not on the mirror yet: retried (PaymentSettlementUnknown) until it
   * can no longer reach consensus: a minute after the end of its validity window when the payment
   * records it (the mirror's lag), else 10 minutes after its valid start; then, or when it failed on
   * the ledger, PaymentNotSettled (final: nothing to refund).
   */
  async function requireSettledOnLedger(transactionId: string, validUntil: Date | null): Promise<void> {
    const onLedger = await ledgerCall('read payment', () => mirror.getTransaction(transactionId));
    if (onLedger?.result === 'SUCCESS') return;
    const validStartMs = Number(/@(\d+)\./.exec(transactionId)?.[1] ?? 0) * 1000;
    const deadMs = validUntil ? validUntil.getTime() + 60_000 : validStartMs + 10 * 60_000;
    if (!onLedger && Date.now() < deadMs) {
      throw ApplicationFailure.create({ message: `payment ${transactionId} is not on the ledger yet`, type: 'PaymentSettlementUnknown', nonRetryable: false });
    }
    // nothing moved and nothing will: the payment is 'failed', so no reconciler pass looks at it again
    await markPaymentFailedIfVerified(deps.sql, transactionId);
    throw ApplicationFailure.create({ message: `payment ${transactionId} did not succeed on the ledger (${onLedger?.result ?? 'not found'})`, type: 'PaymentNotSettled', nonRetryable: true });
  }

  /**
   * Pays a settled payment back (payTo -> payer, the exact amount) and records the refund on the
   * payment and on the request it paid for (with the step that failed, as data, when given).
   * Idempotent per payment. A payment that never moved (failed, or verified and not on the ledger
   * once it can no longer get there) is PaymentNotSettled: nothing to refund.
   */
  async function refundPayment(input: { paymentTransactionId: string; reason: string; failedStep?: RequestFailedStep }): Promise<{ refundTransactionId: string; payer: string; amountTinybars: string }> {
    const payment = await findPaymentByTransactionId(deps.sql, input.paymentTransactionId);
    if (!payment) throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} is not recorded`, type: 'PaymentNotFound', nonRetryable: true });
    if (payment.status === 'refunded' && payment.refund_transaction_id) {
      await markRequestRefunded(deps.sql, input.paymentTransactionId, payment.refund_transaction_id, input.reason, input.failedStep);
      return { refundTransactionId: payment.refund_transaction_id, payer: payment.payer, amountTinybars: payment.amount_tinybars.toString() };
    }
    if (payment.status === 'failed') {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} was never settled (failed)`, type: 'PaymentNotSettled', nonRetryable: true });
    }
    // whoever asked (a reconciler pass that read the request a moment earlier, an API, a workflow
    // started straight in Temporal): a payment whose request delivered its passport or upgrade is
    // never paid back as well, nor one whose claim another run took to the ledger (it may be minting;
    // that run refunds it itself if it fails)
    const claim = await requestClaimOfPayment(deps.sql, input.paymentTransactionId);
    if (claim?.status === 'issued' || claim?.status === 'upgraded') {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId} bought its request (${claim.status}): not refunded`, type: 'PaymentHasOutcome', nonRetryable: true });
    }
    if (claim?.status === 'pending' && claim.ledgerWritesRunId !== null && claim.ledgerWritesRunId !== callerRunId()) {
      throw ApplicationFailure.create({ message: `payment ${input.paymentTransactionId}: its request is being finished by another workflow run: not refunded`, type: 'PaymentClaimInFlight', nonRetryable: true });
    }
    if (payment.status === 'verified') await requireSettledOnLedger(input.paymentTransactionId, payment.valid_until);
    const r = await ledgerCall('refund', () =>
      submitter.submit({
        idempotencyKey: `refund:${input.paymentTransactionId}`,
        kind: 'hbar_transfer',
        build: () => buildHbarTransfer({ from: payment.pay_to, to: payment.payer, amountTinybars: payment.amount_tinybars, memo: 'agent-passport refund' }),
      }),
    );
    await markPaymentRefunded(deps.sql, input.paymentTransactionId, r.transactionId);
    await markRequestRefunded(deps.sql, input.paymentTransactionId, r.transactionId, input.reason, input.failedStep);
    return { refundTransactionId: r.transactionId, payer: payment.payer, amountTinybars: payment.amount_tinybars.toString() };
  }

  return { mintPassport, deliverPassport, setPassportFrozen, burnUndeliveredPassport, publishAudit, updatePassportMetadata, wipePassport, refundPayment };
}

export type PassportLedgerActivities = ReturnType<typeof createPassportLedgerActivities>;
