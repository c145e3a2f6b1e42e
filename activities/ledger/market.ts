/**
 * Ledger activities of the taskLifecycle workflow (DESIGN.md section 6 "Marketplace escrow"). Every
 * write goes through the idempotent submitter under a key the workflow derives from the task id and
 * its step number, so a retried activity never creates, signs or pays twice.
 *
 *   createEscrowSchedule   ScheduleCreate of a transfer poster -> escrow (admin key: the service's)
 *   submitScheduleSign     a poster-signed ScheduleSign (bytes from the API); reports whether the
 *                          scheduled transfer executed and with what result
 *   deleteEscrowSchedule   ScheduleDelete; tells whether the schedule had executed meanwhile
 *   payoutEscrow           escrow -> claimer (price - fee) and escrow -> treasury (fee), one transfer
 *   refundEscrow           escrow -> poster
 *   submitDirectTransfer   a poster-signed transfer (tasks without escrow), checked by the API
 *   publishTaskMessage     the marketplace topic message of a step
 *
 * The escrow account is controlled by the operator key (localnet bootstrap; DESIGN 6), so the
 * operator signs its payouts; the operator also pays every fee here, including the scheduled
 * transfer's (the schedule's creator pays it), so the parties' balances move by the task amounts only.
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Sql } from 'postgres';
import type { TaskMessage } from '../../domain/market.js';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';
import { buildScheduleCreate, buildScheduleDelete, buildTopicMessage } from '../../ledger/operations.js';
import { AccountId, Hbar, HbarUnit, Long, Transaction, TransferTransaction } from '@hashgraph/sdk';
import type { LedgerActivityDeps } from '../index.js';
import { ledgerCall } from './ledgerCall.js';

export interface EscrowScheduleInput {
  idempotencyKey: string;
  taskId: string;
  posterAccountId: string;
  amountTinybars: string;
  /** ISO time the schedule expires (explicit expiration) */
  expiresAt: string;
  /** 'fund' (the price) or 'topup' (an increase of a funded task) */
  purpose: 'fund' | 'topup';
}

export interface ScheduleSignOutcome {
  transactionId: string;
  /** the scheduled transfer ran (SUCCESS): the money is in the escrow account */
  executed: boolean;
  /** the scheduled transfer's own result when it ran and failed (e.g. INSUFFICIENT_ACCOUNT_BALANCE) */
  failedStatus?: string;
}

export interface ScheduleDeleteOutcome {
  /** deleted now (or earlier by this same key) */
  deleted: boolean;
  /** the schedule had executed before the delete: its money is in escrow */
  executed: boolean;
  /** the schedule was already gone (expired or deleted) */
  gone: boolean;
}

const tinybars = (n: string | bigint) => Hbar.from(Long.fromString(BigInt(n).toString()), HbarUnit.Tinybar);

/** A multi-leg HBAR transfer out of one account (amounts > 0 only). */
function buildTransferFrom(from: string, legs: { to: string; amount: bigint }[], memo?: string): TransferTransaction {
  const total = legs.reduce((s, l) => s + l.amount, 0n);
  if (total <= 0n) throw new LedgerError('INVALID_ACCOUNT_AMOUNTS', 'transfer amount must be positive', { phase: 'input', retryable: false });
  const tx = new TransferTransaction().addHbarTransfer(AccountId.fromString(from), tinybars(-total));
  for (const l of legs) if (l.amount > 0n) tx.addHbarTransfer(AccountId.fromString(l.to), tinybars(l.amount));
  if (memo) tx.setTransactionMemo(memo);
  return tx;
}

export function createMarketLedgerActivities(deps: { sql: Sql; ledger: LedgerActivityDeps }) {
  const { deployment, submitter, mirror, client } = deps.ledger;
  const operatorKey = client.operatorPublicKey;

  /** What happened to a schedule's transfer, from the mirror: not run yet, run with SUCCESS, or run and failed. */
  async function scheduledOutcome(scheduleId: string): Promise<{ executed: boolean; failedStatus?: string }> {
    const s = await mirror.getSchedule(scheduleId);
    if (!s || !s.executed_timestamp) return { executed: false };
    // the scheduled child record (the create's transaction id, scheduled=true) carries the transfer's own result
    const result = await scheduledChildResult(scheduleId);
    if (result && result !== 'SUCCESS') return { executed: false, failedStatus: result };
    return { executed: true };
  }

  async function scheduledChildResult(scheduleId: string): Promise<string | null> {
    const rows = await deps.sql<{ transaction_id: string }[]>`
      select transaction_id from ledger_submissions where kind = 'schedule_create' and receipt->>'scheduleId' = ${scheduleId} limit 1`;
    const id = rows[0]?.transaction_id;
    if (!id) return null;
    const list = await mirror.getTransactions(id);
    const child = list.find((t) => t.scheduled === true);
    return child ? child.result : null;
  }

  async function createEscrowSchedule(input: EscrowScheduleInput): Promise<{ scheduleId: string; transactionId: string }> {
    const r = await ledgerCall('escrow schedule', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'schedule_create',
        build: () =>
          buildScheduleCreate({
            scheduled: buildTransferFrom(input.posterAccountId, [{ to: deployment.escrow, amount: BigInt(input.amountTinybars) }], `task ${input.taskId} ${input.purpose}`),
            adminKey: operatorKey ?? undefined,
            memo: `task ${input.taskId} ${input.purpose}`,
            expirationTime: new Date(input.expiresAt),
            waitForExpiry: false,
          }),
      }),
    );
    if (!r.receipt.scheduleId) throw ApplicationFailure.create({ message: `schedule create ${r.transactionId} has no schedule id`, type: 'LedgerRetryable' });
    return { scheduleId: r.receipt.scheduleId, transactionId: r.transactionId };
  }

  async function submitScheduleSign(input: { idempotencyKey: string; scheduleId: string; signedBytes: string }): Promise<ScheduleSignOutcome> {
    let transactionId: string;
    try {
      const r = await submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'schedule_sign',
        build: () => Transaction.fromBytes(Buffer.from(input.signedBytes, 'base64')),
      });
      transactionId = r.transactionId;
    } catch (err) {
      const le = err instanceof LedgerError ? err : toLedgerError(err);
      // executed by an earlier signature (ours or the poster's own): what counts is its outcome
      if (le.status === 'SCHEDULE_ALREADY_EXECUTED') {
        const o = await scheduledOutcome(input.scheduleId);
        return { transactionId: le.transactionId ?? '', ...o };
      }
      return ledgerCall('schedule sign', () => Promise.reject(le));
    }
    const o = await ledgerCall('schedule state', () => scheduledOutcome(input.scheduleId));
    return { transactionId, ...o };
  }

  async function deleteEscrowSchedule(input: { idempotencyKey: string; scheduleId: string }): Promise<ScheduleDeleteOutcome> {
    try {
      await submitter.submit({ idempotencyKey: input.idempotencyKey, kind: 'schedule_delete', build: () => buildScheduleDelete({ scheduleId: input.scheduleId }) });
      return { deleted: true, executed: false, gone: false };
    } catch (err) {
      const le = err instanceof LedgerError ? err : toLedgerError(err);
      if (le.status === 'SCHEDULE_ALREADY_EXECUTED') {
        const o = await ledgerCall('schedule state', () => scheduledOutcome(input.scheduleId));
        return { deleted: false, executed: o.executed, gone: false };
      }
      if (le.status === 'SCHEDULE_ALREADY_DELETED' || le.status === 'INVALID_SCHEDULE_ID') return { deleted: false, executed: false, gone: true };
      return ledgerCall('schedule delete', () => Promise.reject(le));
    }
  }

  async function payoutEscrow(input: { idempotencyKey: string; taskId: string; claimerAccountId: string; claimerTinybars: string; feeTinybars: string }): Promise<{ transactionId: string }> {
    const r = await ledgerCall('escrow payout', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'hbar_transfer',
        build: () =>
          buildTransferFrom(
            deployment.escrow,
            [
              { to: input.claimerAccountId, amount: BigInt(input.claimerTinybars) },
              { to: deployment.treasury, amount: BigInt(input.feeTinybars) },
            ],
            `task ${input.taskId} payout`,
          ),
      }),
    );
    return { transactionId: r.transactionId };
  }

  async function refundEscrow(input: { idempotencyKey: string; taskId: string; posterAccountId: string; amountTinybars: string }): Promise<{ transactionId: string }> {
    const r = await ledgerCall('escrow refund', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'hbar_transfer',
        build: () => buildTransferFrom(deployment.escrow, [{ to: input.posterAccountId, amount: BigInt(input.amountTinybars) }], `task ${input.taskId} refund`),
      }),
    );
    return { transactionId: r.transactionId };
  }

  async function submitDirectTransfer(input: { idempotencyKey: string; signedBytes: string }): Promise<{ transactionId: string }> {
    const r = await ledgerCall('direct payment', () =>
      submitter.submit({ idempotencyKey: input.idempotencyKey, kind: 'hbar_transfer', build: () => Transaction.fromBytes(Buffer.from(input.signedBytes, 'base64')) }),
    );
    return { transactionId: r.transactionId };
  }

  async function publishTaskMessage(input: { idempotencyKey: string; message: TaskMessage }): Promise<{ transactionId: string; sequenceNumber: number | null }> {
    const r = await ledgerCall('marketplace message', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'topic_message',
        build: () => buildTopicMessage({ topicId: deployment.topics.marketplace, message: JSON.stringify(input.message) }),
      }),
    );
    return { transactionId: r.transactionId, sequenceNumber: r.receipt.topicSequenceNumber ? Number(r.receipt.topicSequenceNumber) : null };
  }

  return { createEscrowSchedule, submitScheduleSign, deleteEscrowSchedule, payoutEscrow, refundEscrow, submitDirectTransfer, publishTaskMessage };
}

export type MarketLedgerActivities = ReturnType<typeof createMarketLedgerActivities>;
