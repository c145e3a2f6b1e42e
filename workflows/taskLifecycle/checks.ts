/**
 * The refusals of the taskLifecycle workflow's steps: the rules of domain/market.ts (statuses and
 * parties, delivery, completion with escrow or not, reward increases) and of
 * domain/ledgerTransaction.ts (the client's bytes), the same ones the API applies before it sends an
 * Update. Validators refuse with them before anything runs; handlers check again under the mutex.
 */
import { parseHederaDid } from '@agent-passport/core/did';
import { directPaymentBytesProblem, scheduleSignsProblem, type ClientTxPolicy } from '../../domain/ledgerTransaction.js';
import {
  completionRefusal,
  deliveryRefusal,
  escrowReleaseRefusal,
  increaseCapRefusal,
  increaseRefusal,
  pendingScheduleIds,
  refusalOf,
  taskPayment,
  type TaskOperation,
} from '../../domain/market.js';
import type { CompleteArgs, IncreaseRewardArgs, ScheduleSignBytes } from '../contracts/taskLifecycle.js';
import { bytesRefusal, refuse } from './refusals.js';
import type { TaskRun } from './run.js';

export function stepChecks(run: TaskRun, o: { promises: boolean; rewardIncreasesMax: number }) {
  const task = run.task;
  /** structural checks only (deterministic): the activity checks signatures and the validity window */
  const clientTxPolicy: ClientTxPolicy = { nodeAccountIds: run.facts?.nodeAccountIds };

  function check(op: TaskOperation, caller?: string): void {
    refuse(refusalOf(op, task, caller));
  }

  const checkDelivery = (args: { resultBody?: string; resultIpfs?: string }) => refuse(deliveryRefusal(args));

  const checkIncrease = (args: IncreaseRewardArgs) => {
    check('increaseReward', args.posterDid);
    refuse(increaseRefusal(task, args.newPriceHbar));
    // each increase replaces a schedule at the operator's cost: a bounded number per task (escrow promises)
    if (o.promises) refuse(increaseCapRefusal(task, o.rewardIncreasesMax));
  };

  /**
   * Each ScheduleSign must be exactly a ScheduleSign of a different one of the task's pending
   * schedules, paid by the operator, for one of our nodes, within the fee bounds.
   */
  function checkScheduleSigns(signs: ScheduleSignBytes[] | undefined): void {
    const p = scheduleSignsProblem(signs ?? [], { payer: run.facts?.operator, pendingScheduleIds: pendingScheduleIds(task) }, clientTxPolicy);
    if (p) throw bytesRefusal(`The signature of escrow schedule ${p.scheduleId} was refused`, p.problem.message, p.problem.hint);
  }

  /** The one payment completing this task without escrow may make (domain/market.ts taskPayment). */
  function checkDirectTransfer(bytes: string): void {
    const expected = taskPayment(task, { poster: run.posterAccount, claimer: parseHederaDid(task.claimerDid ?? '')?.accountId ?? '', treasury: run.facts?.treasury });
    const p = directPaymentBytesProblem(bytes, expected, clientTxPolicy);
    if (p) throw bytesRefusal('The payment transfer was refused', p.message, p.hint);
  }

  const checkComplete = (args: CompleteArgs) => {
    check('complete', args.posterDid);
    refuse(escrowReleaseRefusal(task));
    const signed = pendingScheduleIds(task).length === 0 || (args.scheduleSigns !== undefined && args.scheduleSigns.length > 0);
    refuse(completionRefusal(task, { posterSignature: signed, transfer: Boolean(args.directTransferBytes) }));
  };

  /** The validator's checks: the step's rules and the client bytes it carries (issue 19). */
  const validateComplete = (args: CompleteArgs) => {
    checkComplete(args);
    if (task.escrow) checkScheduleSigns(args.scheduleSigns);
    else checkDirectTransfer(args.directTransferBytes!);
  };

  return { check, checkDelivery, checkIncrease, checkScheduleSigns, checkComplete, validateComplete };
}
