/**
 * Ledger activities of the taskLifecycle workflow (DESIGN.md section 6 "Marketplace escrow"). Every
 * write goes through the idempotent submitter under a key the workflow derives from the task id and
 * its step number, so a retried activity never creates, signs or pays twice.
 *
 *   createEscrowSchedule   ScheduleCreate of a transfer poster -> escrow (admin key: the service's)
 *   submitScheduleSign     a poster-signed ScheduleSign (bytes from the API), checked here again
 *                          (ledger/scheduleSignCheck.ts) before the operator pays for and signs it;
 *                          reports whether the scheduled transfer executed and with what result
 *   deleteEscrowSchedule   ScheduleDelete; tells whether the schedule had executed meanwhile
 *   payoutEscrow           escrow -> claimer (price - fee) and escrow -> treasury (fee), one transfer
 *   refundEscrow           escrow -> poster
 *   submitDirectTransfer   a poster-signed transfer (tasks without escrow), checked here again
 *                          (ledger/transferCheck.ts checkPayment), submitted without any service signature
 *   publishTaskMessage     the marketplace topic message of a step (public: ids and public values, never the result or its reference)
 *
 * Client bytes (issue 19 item 1): the workflow's input is not trusted. Whatever reaches these
 * activities (through the API, or written to Temporal by anyone else) is checked with the same
 * checkers the API uses, against the task's facts from the workflow (poster, claimer, price, fee,
 * pending schedules) and the ledger (the poster's key, the schedule's content), before it is
 * submitted; the operator signs only the ScheduleSign it pays for. A refused transaction fails the
 * activity with a non-retryable ClientTransactionRefused (activities/ledger/ledgerCall.ts).
 *
 * The escrow account has its own key (issue 19 item 3), which signs its payouts and refunds; the
 * operator pays every fee here (the payout's, the ScheduleSign's, and the scheduled transfer's as the
 * schedule's creator), so the escrow moves by escrowed amounts only and the parties' balances by the
 * task amounts only. Schedule outcomes come from the ledger (ledger/scheduleState.ts), never from
 * the mirror's lag (issue 19 item 5).
 */
import { ApplicationFailure } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { paymentMemo, publicTaskMessage, type TaskMessage } from '../../domain/market.js';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';
import { buildHbarTransfer, buildScheduleCreate, buildScheduleDelete, buildTopicMessage } from '../../ledger/operations.js';
import { ScheduleDeleteTransaction, Transaction, TransferTransaction, type PublicKey } from '@hashgraph/sdk';
import { parsePrivateKey, publicKeyFromMirror } from '@agent-passport/core/keys';
import { clientNodeAccountIds } from '../../ledger/client.js';
import { checkPayment, decodeTransactionBase64, TransferCheckError, type TransferCheckPolicy } from '../../ledger/transferCheck.js';
import { checkScheduleSign } from '../../ledger/scheduleSignCheck.js';
import { readScheduleState, type ScheduleState } from '../../ledger/scheduleState.js';
import { findScheduleCreate, submissionsWithPrefix } from '../../db/queries/ledgerSubmissions.js';
import { withTaskEscrowLock } from '../../db/queries/marketEscrow.js';
import type { LedgerServices } from '../../ledger/services.js';
import { ledgerCall } from './ledgerCall.js';
import { taskWorkflowId } from '../../workflows/contracts/taskLifecycle.js';

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

export interface ScheduleSignInput {
  idempotencyKey: string;
  scheduleId: string;
  /** base64 of the poster-signed ScheduleSign */
  signedBytes: string;
  /** the task's poster: the only account the schedule may debit, whose key must have signed */
  posterAccountId?: string;
  /** the task's schedules still waiting for the poster's signature (the bytes must sign scheduleId, one of them) */
  pendingScheduleIds?: string[];
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

/** The task's facts a direct payment is checked against (issue 19; sent by the workflow). */
export interface DirectPaymentFacts {
  taskId: string;
  posterAccountId: string;
  claimerAccountId: string;
  priceTinybars: string;
  feeTinybars: string;
}

/** One transfer out of the escrow account: to whom, how much. */
export interface EscrowLeg {
  to: string;
  amountTinybars: bigint;
}

/**
 * The escrow account's books per task (issue 19 item 4): a schedule's outcome from the ledger, what
 * a task holds, and the one way money leaves the escrow (escrowTransfer, under the task's own payout
 * or refund key). Shared by the task workflow's activities and the escrow reconciler's
 * (activities/ledger/marketEscrowReconciler.ts).
 */
export function escrowBooks(deps: { sql: Sql; ledger: LedgerServices }) {
  const { deployment, submitter, mirror, client } = deps.ledger;
  const operatorKey = client.operatorPublicKey;
  // the escrow's own key signs its payouts and refunds (the operator's key when the escrow is an account of the operator's key)
  const escrowKey = parsePrivateKey(deployment.escrowPrivateKey);
  const escrowSigners = operatorKey && escrowKey.publicKey.toStringRaw() === operatorKey.toStringRaw() ? [] : [escrowKey];

  /** A schedule's state from the ledger; the ScheduleCreate this service recorded names its scheduled transaction once it is purged. */
  async function scheduleState(scheduleId: string): Promise<ScheduleState> {
    const created = await findScheduleCreate(deps.sql, scheduleId);
    return readScheduleState(client, mirror, scheduleId, { scheduledTransactionId: created?.scheduledTransactionId });
  }

  /** What happened to a schedule's transfer, from the ledger: not run (yet), run with SUCCESS, or run and failed. */
  async function scheduledOutcome(scheduleId: string): Promise<{ executed: boolean; failedStatus?: string }> {
    const s = await scheduleState(scheduleId);
    if (s.status !== 'executed') return { executed: false };
    if (s.result !== 'SUCCESS') return { executed: false, failedStatus: s.result };
    return { executed: true };
  }

  const escrowNet = (tx: TransferTransaction | undefined): bigint =>
    (tx?.hbarTransfersList ?? []).filter((t) => t.accountId.toString() === deployment.escrow).reduce((s, t) => s + BigInt(t.amount.toTinybars().toString()), 0n);

  /**
   * What the escrow holds for a task, from this service's own records of its ledger writes under the
   * task's workflow id (never from the workflow's input) and the ledger: the task's escrow schedules
   * that executed with SUCCESS, less every payout and refund recorded for it (pending ones count as
   * spent). `except` is the write being prepared now.
   */
  async function escrowHeld(taskId: string, except: string): Promise<bigint> {
    const rows = await submissionsWithPrefix(deps.sql, `${taskWorkflowId(taskId)}/`);
    const deleted = new Set<string>();
    for (const r of rows) {
      if (r.kind !== 'schedule_delete' || r.status !== 'succeeded') continue;
      const id = (Transaction.fromBytes(new Uint8Array(r.transaction_bytes)) as ScheduleDeleteTransaction).scheduleId;
      if (id) deleted.add(id.toString());
    }
    let held = 0n;
    for (const r of rows) {
      if (r.kind === 'schedule_create' && r.status === 'succeeded') {
        const scheduleId = (r.receipt as { scheduleId?: string } | null)?.scheduleId;
        if (!scheduleId || deleted.has(scheduleId)) continue; // deleted before it ran
        const scheduled = (Transaction.fromBytes(new Uint8Array(r.transaction_bytes)) as unknown as { _scheduledTransaction?: TransferTransaction })._scheduledTransaction;
        const amount = scheduled instanceof TransferTransaction ? escrowNet(scheduled) : 0n;
        if (amount <= 0n) continue;
        const o = await scheduledOutcome(scheduleId);
        if (o.executed) held += amount;
      } else if (r.kind === 'hbar_transfer' && r.idempotency_key !== except && r.status !== 'failed') {
        const tx = Transaction.fromBytes(new Uint8Array(r.transaction_bytes));
        const out = tx instanceof TransferTransaction ? escrowNet(tx) : 0n;
        if (out < 0n) held += out; // a payout or refund out of the escrow
      }
    }
    return held;
  }

  /**
   * Pays a task's payout or refund out of the escrow with the escrow key, one at a time per task (a
   * PostgreSQL advisory lock, across workers): the write's key must be the task's own payout or refund
   * key, and the amount may not exceed what the task holds (escrowHeld). A workflow whose input was
   * forged can thus move only what its task escrowed, once. `legsOf` may be a function of what the
   * task holds (the escrow reconciler pays out or refunds whatever is left); it must move something.
   */
  async function escrowTransfer(taskId: string, idempotencyKey: string, step: 'payout' | 'refund', legsOf: EscrowLeg[] | ((held: bigint) => EscrowLeg[])): Promise<{ transactionId: string }> {
    if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(taskId) || idempotencyKey !== `${taskWorkflowId(taskId)}/${step}`) {
      throw ApplicationFailure.create({ message: `escrow ${step}: ${idempotencyKey} is not the ${step} of task ${taskId}`, type: 'LedgerError.ESCROW_NOT_HELD', nonRetryable: true });
    }
    const r = await withTaskEscrowLock(deps.sql, taskId, () =>
      ledgerCall(`escrow ${step}`, () =>
        submitter.submit({
          idempotencyKey,
          kind: 'hbar_transfer',
          signers: escrowSigners,
          build: async () => {
            const held = await escrowHeld(taskId, idempotencyKey);
            const legs = typeof legsOf === 'function' ? legsOf(held) : legsOf;
            const amount = legs.reduce((s, l) => s + l.amountTinybars, 0n);
            if (amount > held || (typeof legsOf === 'function' && amount <= 0n)) {
              const why = `task ${taskId} holds ${held} tinybars in escrow; the ${step} asks ${amount}`;
              throw new LedgerError('ESCROW_NOT_HELD', why, { phase: 'input', retryable: false, hint: why });
            }
            return buildHbarTransfer({ from: deployment.escrow, legs, memo: `task ${taskId} ${step}` });
          },
        }),
      ),
    );
    return { transactionId: r.transactionId };
  }

  return { scheduleState, scheduledOutcome, escrowHeld, escrowTransfer };
}

export function createMarketLedgerActivities(deps: { sql: Sql; ledger: LedgerServices }) {
  const { deployment, submitter, mirror, client } = deps.ledger;
  const operatorKey = client.operatorPublicKey;
  const operatorId = deployment.operator.accountId;
  const { scheduleState, scheduledOutcome, escrowTransfer } = escrowBooks(deps);

  const policy = (): TransferCheckPolicy => ({ nodeAccountIds: clientNodeAccountIds(client).map((n) => n.toString()), now: Date.now() });

  /** The account's single public key from the mirror; a refusal when it has none (a key list, a deleted account). */
  async function accountKey(accountId: string, role: string): Promise<PublicKey> {
    const account = await mirror.getAccount(accountId);
    const key = account && !account.deleted ? publicKeyFromMirror(account.key) : null;
    if (!key) throw new TransferCheckError('missing_signer_signature', `the ${role} account ${accountId} has no single key to check its signature with`);
    return key;
  }

  /**
   * The schedule must be one of this service's escrow schedules (created by the operator, admin key
   * set, memo "task ..."), whose scheduled transaction is a plain HBAR transfer from the poster to the
   * escrow account and nothing else: only then may the operator's signature ride on a ScheduleSign of
   * it. Returns the poster (the debited account).
   */
  async function requireEscrowSchedule(scheduleId: string, posterAccountId: string | undefined): Promise<string> {
    const s = await scheduleState(scheduleId);
    const refuse = (why: string): never => {
      throw new TransferCheckError('schedule_not_pending', `schedule ${scheduleId} is not an escrow schedule of this service: ${why}`);
    };
    if (s.status === 'gone') refuse('the ledger does not have it');
    if (s.creatorAccountId !== operatorId || !s.adminKeyPresent || !(s.memo ?? '').startsWith('task ')) refuse('another creator, admin key or memo');
    const legs = (s.hbarLegs ?? []).filter((l) => l.tinybars !== 0n);
    const debits = legs.filter((l) => l.tinybars < 0n);
    const credits = legs.filter((l) => l.tinybars > 0n);
    if (s.otherContent || debits.length !== 1 || credits.length !== 1 || credits[0].account !== deployment.escrow || debits[0].tinybars + credits[0].tinybars !== 0n) {
      refuse('its transaction is not one transfer into the escrow account');
    }
    const poster = debits[0].account;
    if ([operatorId, deployment.treasury, deployment.escrow, deployment.payTo].includes(poster)) refuse('it debits a service account');
    if (posterAccountId !== undefined && poster !== posterAccountId) refuse(`it debits ${poster}, not the poster ${posterAccountId}`);
    return poster;
  }

  async function createEscrowSchedule(input: EscrowScheduleInput): Promise<{ scheduleId: string; transactionId: string }> {
    const r = await ledgerCall('escrow schedule', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'schedule_create',
        build: () =>
          buildScheduleCreate({
            scheduled: buildHbarTransfer({ from: input.posterAccountId, to: deployment.escrow, amountTinybars: input.amountTinybars, memo: `task ${input.taskId} ${input.purpose}` }),
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

  async function submitScheduleSign(input: ScheduleSignInput): Promise<ScheduleSignOutcome> {
    // older workflows name only the schedule they sign: it is then their one pending schedule
    const pending = input.pendingScheduleIds ?? [input.scheduleId];
    let transactionId: string;
    try {
      const r = await submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'schedule_sign',
        checked: async () => {
          const tx = decodeTransactionBase64(input.signedBytes);
          const poster = await requireEscrowSchedule(input.scheduleId, input.posterAccountId);
          return checkScheduleSign(tx, { payer: operatorId, pendingScheduleIds: pending, scheduleId: input.scheduleId }, await accountKey(poster, 'poster'), policy());
        },
      });
      transactionId = r.transactionId;
    } catch (err) {
      if (err instanceof TransferCheckError) return ledgerCall('schedule sign', () => Promise.reject(err));
      const le = err instanceof LedgerError ? err : toLedgerError(err);
      // executed by an earlier signature (ours or the poster's own): what counts is its outcome
      if (le.status === 'SCHEDULE_ALREADY_EXECUTED') {
        const o = await ledgerCall('schedule state', () => scheduledOutcome(input.scheduleId));
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
      if (le.status === 'SCHEDULE_ALREADY_DELETED') return { deleted: false, executed: false, gone: true };
      if (le.status === 'INVALID_SCHEDULE_ID') {
        // purged after its expiry: it may have executed before it expired (its money then sits in escrow)
        const o = await ledgerCall('schedule state', () => scheduledOutcome(input.scheduleId));
        return { deleted: false, executed: o.executed, gone: !o.executed };
      }
      return ledgerCall('schedule delete', () => Promise.reject(le));
    }
  }

  async function payoutEscrow(input: { idempotencyKey: string; taskId: string; claimerAccountId: string; claimerTinybars: string; feeTinybars: string }): Promise<{ transactionId: string }> {
    return escrowTransfer(input.taskId, input.idempotencyKey, 'payout', [
      { to: input.claimerAccountId, amountTinybars: BigInt(input.claimerTinybars) },
      { to: deployment.treasury, amountTinybars: BigInt(input.feeTinybars) },
    ]);
  }

  async function refundEscrow(input: { idempotencyKey: string; taskId: string; posterAccountId: string; amountTinybars: string }): Promise<{ transactionId: string }> {
    return escrowTransfer(input.taskId, input.idempotencyKey, 'refund', [{ to: input.posterAccountId, amountTinybars: BigInt(input.amountTinybars) }]);
  }

  async function submitDirectTransfer(input: { idempotencyKey: string; signedBytes: string } & Partial<DirectPaymentFacts>): Promise<{ transactionId: string }> {
    const r = await ledgerCall('direct payment', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'hbar_transfer',
        checked: async () => {
          const { taskId, posterAccountId, claimerAccountId, priceTinybars, feeTinybars } = input;
          if (!taskId || !posterAccountId || !claimerAccountId || priceTinybars === undefined || feeTinybars === undefined) {
            throw new TransferCheckError('transfers_mismatch', 'the payment names no task facts to check it against', 'Send the complete request again');
          }
          const expected = {
            payer: posterAccountId,
            claimer: claimerAccountId,
            treasury: deployment.treasury,
            priceTinybars: BigInt(priceTinybars),
            feeTinybars: BigInt(feeTinybars),
            memo: paymentMemo(taskId),
          };
          const tx = decodeTransactionBase64(input.signedBytes);
          return checkPayment(tx, expected, await accountKey(posterAccountId, 'poster'), policy()).checked;
        },
      }),
    );
    return { transactionId: r.transactionId };
  }

  async function publishTaskMessage(input: { idempotencyKey: string; message: TaskMessage }): Promise<{ transactionId: string; sequenceNumber: number | null }> {
    const r = await ledgerCall('marketplace message', () =>
      submitter.submit({
        idempotencyKey: input.idempotencyKey,
        kind: 'topic_message',
        build: () => buildTopicMessage({ topicId: deployment.topics.marketplace, message: JSON.stringify(publicTaskMessage(input.message)) }),
      }),
    );
    return { transactionId: r.transactionId, sequenceNumber: r.receipt.topicSequenceNumber ? Number(r.receipt.topicSequenceNumber) : null };
  }

  return { createEscrowSchedule, submitScheduleSign, deleteEscrowSchedule, payoutEscrow, refundEscrow, submitDirectTransfer, publishTaskMessage };
}

export type MarketLedgerActivities = ReturnType<typeof createMarketLedgerActivities>;
