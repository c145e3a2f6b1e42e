/**
 * The escrow of a task (DESIGN.md 6 "Marketplace escrow"), as the taskLifecycle workflow manages it:
 *
 *   create / delete        ScheduleCreate poster -> escrow (the price, or a top-up), ScheduleDelete
 *   signPending            the poster's ScheduleSigns of the pending schedules (funded once they run)
 *   unwind                 pending schedules deleted, whatever is held refunded to the poster
 *   raise                  increase-reward: a scheduled escrow replaced, a funded one topped up
 *   renewOrExpire          a pending schedule renewed before it expires, or marked expired (since
 *                          UNFUNDED_SCHEDULES_LAPSE_PATCH none is renewed unless the timings ask:
 *                          at its expiry it is checked once and lapses, escrow `expired`)
 *   release / payOut       escrow -> claimer (price - fee) and treasury (fee), of what was escrowed;
 *                          underfunded (409) while a raised price is not covered yet
 *   releaseAfterReview     the review window's payout (escrow promises)
 *   payDirectly            a task without escrow: the poster's own signed transfer
 *
 * Every ledger write's idempotency key comes from the run (opKey, or the task's one payout and
 * refund key), so a retried activity never creates, signs or pays twice.
 */
import { patched } from '@temporalio/workflow';
import { parseHederaDid } from '@agent-passport/core/did';
import { payoutOf, pendingScheduleIds, tinybarsToHbar } from '../../domain/market.js';
import type { ScheduleSignBytes } from '../contracts/taskLifecycle.js';
import { badRequest, ledgerHint, ledgerRefusal, refusalFailure } from './refusals.js';
import { ESCROW_PAYS_ESCROWED_PATCH, escrowed, opKey, price, type Commit, type ScheduleTimings, type TaskActivities, type TaskRun } from './run.js';

export function escrowOf(run: TaskRun, activities: TaskActivities, commit: Commit, timings: ScheduleTimings) {
  const task = run.task;
  const { ledger, durable } = activities;

  async function create(amount: bigint, purpose: 'fund' | 'topup'): Promise<{ scheduleId: string; expiresAt: string }> {
    const expiresAt = new Date(Date.now() + timings.lifetimeMs).toISOString();
    try {
      const r = await ledger.createEscrowSchedule({
        idempotencyKey: opKey(run, `${purpose}-create`),
        taskId: task.taskId,
        posterAccountId: run.posterAccount,
        amountTinybars: amount.toString(),
        expiresAt,
        purpose,
      });
      return { scheduleId: r.scheduleId, expiresAt };
    } catch (err) {
      return ledgerRefusal(err, 'The escrow schedule could not be created');
    }
  }

  /** Deletes a pending schedule; true when it had executed meanwhile (its amount is then in escrow). */
  async function remove(scheduleId: string, label: string): Promise<boolean> {
    const r = await ledger.deleteEscrowSchedule({ idempotencyKey: opKey(run, `delete-${label}-${scheduleId}`), scheduleId });
    return r.executed;
  }

  /**
   * A pending schedule is no longer pending: the funding schedule's escrow becomes `status` (funded or
   * expired); a top-up schedule is dropped (its amount, when it ran, was added by the caller).
   */
  function settle(which: 'fund' | 'topup', status: 'funded' | 'expired'): void {
    if (which === 'fund') {
      task.escrowStatus = status;
      run.scheduleExpiresAt = null;
    } else {
      task.topUpScheduleId = null;
      run.topUpExpiresAt = null;
    }
  }

  /** Submits the poster's ScheduleSign of each pending schedule; afterwards the escrow holds the price. */
  async function signPending(signs: ScheduleSignBytes[], what: string): Promise<void> {
    const pending: { scheduleId: string; amount: bigint; topUp: boolean }[] = [];
    if (task.escrowStatus === 'scheduled' && task.scheduleId) pending.push({ scheduleId: task.scheduleId, amount: price(run), topUp: false });
    if (task.topUpScheduleId) pending.push({ scheduleId: task.topUpScheduleId, amount: price(run) - escrowed(run), topUp: true });
    for (const p of pending) {
      const sign = signs.find((s) => s.scheduleId === p.scheduleId);
      if (!sign) throw badRequest(`The escrow schedule ${p.scheduleId} needs the poster's signature`, 'Send posterPrivateKey (the service signs the schedule in memory)');
      let outcome;
      try {
        outcome = await ledger.submitScheduleSign({
          idempotencyKey: opKey(run, `sign-${p.scheduleId}`),
          scheduleId: p.scheduleId,
          signedBytes: sign.signedBytes,
          posterAccountId: run.posterAccount,
          pendingScheduleIds: pending.map((q) => q.scheduleId),
        });
      } catch (err) {
        ledgerRefusal(err, what);
      }
      if (outcome.failedStatus) {
        throw refusalFailure({ kind: 'invalid', code: 'invalid_request', status: 400, message: `${what}: the escrow transfer failed with ${outcome.failedStatus}`, hint: ledgerHint(outcome.failedStatus) });
      }
      if (!outcome.executed) throw badRequest(`${what}: the signature did not complete escrow schedule ${p.scheduleId}`, ledgerHint('INVALID_SIGNATURE'));
      task.escrowedTinybars = (escrowed(run) + p.amount).toString();
      settle(p.topUp ? 'topup' : 'fund', 'funded');
      run.version++;
    }
  }

  /** Cancels the escrow: pending schedules deleted, anything held refunded to the poster. */
  async function unwind(): Promise<void> {
    if (task.escrowStatus === 'scheduled' && task.scheduleId) {
      if (await remove(task.scheduleId, 'fund')) {
        task.escrowedTinybars = (escrowed(run) + price(run)).toString();
        task.escrowStatus = 'funded';
      } else task.escrowStatus = 'cancelled';
      run.scheduleExpiresAt = null;
    }
    if (task.topUpScheduleId) {
      const topUpAmount = price(run) - escrowed(run);
      if (await remove(task.topUpScheduleId, 'topup')) task.escrowedTinybars = (escrowed(run) + topUpAmount).toString();
      task.topUpScheduleId = null;
      run.topUpExpiresAt = null;
    }
    if (escrowed(run) > 0n) {
      const r = await durable.refundEscrow({ idempotencyKey: `${run.wfId}/refund`, taskId: task.taskId, posterAccountId: run.posterAccount, amountTinybars: escrowed(run).toString() });
      task.refundTxId = r.transactionId;
      task.escrowedTinybars = '0';
      task.escrowStatus = 'refunded';
    }
  }

  /** increase-reward: a scheduled (or expired) escrow gets a new schedule for the new price; a funded one a top-up schedule for the difference. */
  async function raise(newPrice: bigint): Promise<void> {
    if (task.escrowStatus === 'scheduled' || task.escrowStatus === 'expired') {
      let executed = false;
      if (task.escrowStatus === 'scheduled' && task.scheduleId) executed = await remove(task.scheduleId, 'fund');
      if (executed) {
        task.escrowedTinybars = (escrowed(run) + price(run)).toString();
        task.escrowStatus = 'funded';
        run.scheduleExpiresAt = null;
      } else {
        run.renewals = 0;
        const s = await create(newPrice, 'fund');
        task.scheduleId = s.scheduleId;
        run.scheduleExpiresAt = s.expiresAt;
        task.escrowStatus = 'scheduled';
      }
    }
    if (task.escrowStatus === 'funded') {
      if (task.topUpScheduleId) {
        const old = price(run) - escrowed(run);
        if (await remove(task.topUpScheduleId, 'topup')) task.escrowedTinybars = (escrowed(run) + old).toString();
        task.topUpScheduleId = null;
        run.topUpExpiresAt = null;
      }
      if (newPrice > escrowed(run)) {
        run.topUpRenewals = 0;
        const s = await create(newPrice - escrowed(run), 'topup');
        task.topUpScheduleId = s.scheduleId;
        run.topUpExpiresAt = s.expiresAt;
      }
    }
  }

  /** when to act on a pending schedule: renewLead before its expiry, or at its expiry once its renewals are used up */
  const renewAt = (expiresAt: string | null, count: number) =>
    expiresAt ? new Date(expiresAt).getTime() - (count >= timings.maxRenewals ? 0 : timings.renewLeadMs) : null;

  async function renewOrExpire(which: 'fund' | 'topup'): Promise<void> {
    const isFund = which === 'fund';
    const scheduleId = isFund ? task.scheduleId : task.topUpScheduleId;
    if (!scheduleId) return;
    const count = isFund ? run.renewals : run.topUpRenewals;
    const maxRenewals = timings.maxRenewals;
    const markExpired = async (reason: string) => {
      settle(which, 'expired');
      await commit('task.expired', { scheduleId, reason });
    };
    let executed: boolean;
    try {
      executed = await remove(scheduleId, `renew${count}`);
    } catch {
      // the ledger cannot be reached or refuses: the schedule runs out as it stands
      if (count >= maxRenewals) return markExpired(`${which} schedule expired`);
      if (isFund) run.renewals = maxRenewals;
      else run.topUpRenewals = maxRenewals;
      return;
    }
    if (executed) {
      // the poster signed it on the ledger directly: the money is in escrow
      const amount = isFund ? price(run) : price(run) - escrowed(run);
      task.escrowedTinybars = (escrowed(run) + amount).toString();
      settle(which, 'funded');
      await commit(null);
      return;
    }
    if (count >= maxRenewals) return markExpired(`${which} schedule expired`);
    if (isFund) run.renewals++;
    else run.topUpRenewals++;
    let s: { scheduleId: string; expiresAt: string };
    try {
      s = await create(isFund ? price(run) : price(run) - escrowed(run), which);
    } catch {
      // the old schedule is deleted and no new one could be made: nothing is pending any more
      return markExpired(`${which} schedule could not be renewed`);
    }
    if (isFund) {
      task.scheduleId = s.scheduleId;
      run.scheduleExpiresAt = s.expiresAt;
    } else {
      task.topUpScheduleId = s.scheduleId;
      run.topUpExpiresAt = s.expiresAt;
    }
    await commit(null);
  }

  /** Escrow -> claimer (amount - fee) and treasury (fee), under the task's one payout key. */
  async function payOut(amount: bigint): Promise<void> {
    const { claimerTinybars, feeTinybars } = payoutOf(amount, task.feeBps);
    const r = await durable.payoutEscrow({
      idempotencyKey: `${run.wfId}/payout`,
      taskId: task.taskId,
      claimerAccountId: parseHederaDid(task.claimerDid!)?.accountId ?? '',
      claimerTinybars: claimerTinybars.toString(),
      feeTinybars: feeTinybars.toString(),
    });
    task.paymentTxId = r.transactionId;
    task.escrowedTinybars = (escrowed(run) - amount).toString();
    task.escrowStatus = 'released';
  }

  /**
   * The escrow holds less than the price (a raised price whose top-up schedule expired unsigned):
   * completion waits. A new top-up schedule for the difference is created (unless one is pending)
   * and the step answers 409; completing again with the poster's key signs it and pays.
   */
  async function underfunded(): Promise<never> {
    const missing = price(run) - escrowed(run);
    if (!task.topUpScheduleId) {
      run.topUpRenewals = 0;
      const s = await create(missing, 'topup');
      task.topUpScheduleId = s.scheduleId;
      run.topUpExpiresAt = s.expiresAt;
      await commit(null);
    }
    throw refusalFailure({
      kind: 'invalid',
      code: 'market_escrow_underfunded',
      status: 409,
      message: `The escrow of task ${task.taskId} holds ${tinybarsToHbar(escrowed(run))} HBAR of the price ${task.priceHbar} HBAR`,
      hint: `Fund the top-up: complete again with posterPrivateKey, which signs top-up schedule ${task.topUpScheduleId} (${tinybarsToHbar(missing)} HBAR); or cancel to get the escrow back`,
    });
  }

  /** complete with escrow: the poster's signatures first, then the payout of exactly what the task escrowed (issue 19 item 4), once it covers the price. */
  async function release(signs: ScheduleSignBytes[]): Promise<void> {
    await signPending(signs, 'The escrow could not be released');
    const paysEscrowed = patched(ESCROW_PAYS_ESCROWED_PATCH);
    if (paysEscrowed && escrowed(run) < price(run)) await underfunded();
    await payOut(paysEscrowed ? escrowed(run) : price(run));
  }

  /**
   * The review window passed with no complete and no cancel: the escrow pays the claimer as a
   * completion does, from what the task holds in escrow; a top-up the poster never signed is deleted
   * first (its amount joins the payout if it ran).
   */
  async function releaseAfterReview(): Promise<void> {
    if (task.topUpScheduleId) {
      const topUpAmount = price(run) - escrowed(run);
      const r = await durable.deleteEscrowSchedule({ idempotencyKey: opKey(run, `delete-review-${task.topUpScheduleId}`), scheduleId: task.topUpScheduleId });
      if (r.executed) task.escrowedTinybars = (escrowed(run) + topUpAmount).toString();
      task.topUpScheduleId = null;
      run.topUpExpiresAt = null;
    }
    await payOut(escrowed(run) < price(run) ? escrowed(run) : price(run));
    task.status = 'completed';
    await commit('task.completed', { claimerDid: task.claimerDid, paymentTxId: task.paymentTxId, reason: 'review window' });
  }

  /** complete without escrow: the poster's own signed transfer (checked by the validator and again by the activity). */
  async function payDirectly(signedBytes: string): Promise<void> {
    let r;
    try {
      const { claimerTinybars, feeTinybars } = payoutOf(price(run), task.feeBps);
      r = await ledger.submitDirectTransfer({
        idempotencyKey: opKey(run, 'payment'),
        signedBytes,
        taskId: task.taskId,
        posterAccountId: run.posterAccount,
        claimerAccountId: parseHederaDid(task.claimerDid!)?.accountId ?? '',
        priceTinybars: (claimerTinybars + feeTinybars).toString(),
        feeTinybars: feeTinybars.toString(),
      });
    } catch (err) {
      ledgerRefusal(err, 'The payment could not be made');
    }
    task.paymentTxId = r.transactionId;
  }

  return { create, settle, signPending, unwind, raise, renewAt, renewOrExpire, release, releaseAfterReview, payDirectly, pending: () => pendingScheduleIds(task) };
}

export type Escrow = ReturnType<typeof escrowOf>;
