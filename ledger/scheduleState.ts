/**
 * What became of a scheduled transaction, from the ledger (issue 19 item 5): the node's ScheduleInfo
 * (executed / deleted timestamps, the scheduled transaction id, the scheduled body), and the
 * scheduled transaction's own result from its receipt. The mirror is asked only for what the node no
 * longer keeps (a receipt older than ~3 minutes, a schedule purged after its expiry), and a mirror
 * that has not indexed an execution yet is never read as "not executed": the answer then is "try
 * again" (a retryable error), not a decision.
 *
 * ScheduleInfo is a paid query (a fraction of a cent, paid by the operator); receipts are free.
 */
import { ScheduleId, ScheduleInfoQuery, type Client } from '@hashgraph/sdk';
import { LedgerError, toLedgerError } from './errors.js';
import type { MirrorClient } from './mirror.js';
import { queryReceipt } from './operations.js';

export interface ScheduleState {
  /**
   * pending: live, neither executed nor deleted; executed: the scheduled transaction ran (see
   * result); deleted: deleted before it ran; gone: the ledger no longer has the schedule (expired
   * and purged, or never existed) and nothing shows it ran
   */
  status: 'pending' | 'executed' | 'deleted' | 'gone';
  /** executed: the scheduled transaction's own result (SUCCESS, or e.g. INSUFFICIENT_ACCOUNT_BALANCE) */
  result?: string;
  scheduledTransactionId?: string;
  /** from ScheduleInfo (absent when gone) */
  creatorAccountId?: string;
  adminKeyPresent?: boolean;
  memo?: string;
  expiresAt?: Date;
  /** the scheduled transfer's HBAR legs (tinybars), when the scheduled body is a CryptoTransfer */
  hbarLegs?: { account: string; tinybars: bigint }[];
  /** the scheduled body has other content than HBAR transfers (token transfers, another type) */
  otherContent?: boolean;
}

export interface ScheduleStateOptions {
  /** the scheduled transaction id, when known (from the ScheduleCreate's receipt): used once the schedule is gone */
  scheduledTransactionId?: string | null;
  /** how long one receipt lookup may take (default 5 s) */
  receiptProbeMs?: number;
}

const num = (v: unknown): bigint => BigInt(String(v ?? 0));
const accountOf = (a: { shardNum?: unknown; realmNum?: unknown; accountNum?: unknown } | null | undefined) =>
  a ? `${num(a.shardNum)}.${num(a.realmNum)}.${num(a.accountNum)}` : '';

/** The id the mirror lists a scheduled transaction under: the ScheduleCreate's id (its child record has scheduled=true). */
function parentId(scheduledTransactionId: string): string {
  return scheduledTransactionId.replace(/\?scheduled.*$/, '');
}

/**
 * The scheduled transaction's own result: its receipt while the node keeps it, else the mirror's
 * record of the scheduled child. null when neither knows it (not run, or run so recently that only
 * the receipt could tell and it did not answer: the caller decides whether that is "not run").
 */
export async function scheduledResult(client: Client, mirror: MirrorClient | undefined, scheduledTransactionId: string, receiptProbeMs = 5_000, maxAttempts = 3): Promise<string | null> {
  try {
    const r = await queryReceipt(client, scheduledTransactionId, { timeoutMs: receiptProbeMs, maxAttempts });
    if (r.found) return r.receipt.status;
  } catch (err) {
    const le = toLedgerError(err);
    // a consensus status of the scheduled transaction itself: its result (e.g. INSUFFICIENT_ACCOUNT_BALANCE)
    if (le.phase === 'receipt' && !le.retryable) return le.status;
    if (!le.retryable) throw le;
  }
  if (!mirror) return null;
  const list = await mirror.getTransactions(parentId(scheduledTransactionId));
  const child = list.find((t) => t.scheduled === true);
  return child ? child.result : null;
}

/** The schedule's state from the ledger (see the module comment). Throws retryable LedgerErrors for transport trouble and undecidable states. */
export async function readScheduleState(client: Client, mirror: MirrorClient | undefined, scheduleId: string, opts: ScheduleStateOptions = {}): Promise<ScheduleState> {
  let info;
  try {
    info = await new ScheduleInfoQuery().setScheduleId(ScheduleId.fromString(scheduleId)).execute(client);
  } catch (err) {
    const le = toLedgerError(err);
    if (le.status !== 'INVALID_SCHEDULE_ID') throw le;
    // purged after its expiry (or never existed): only its scheduled transaction's records can tell whether it ran
    const scheduled = opts.scheduledTransactionId ?? null;
    if (!scheduled) return { status: 'gone' };
    // one receipt attempt: a RECEIPT_NOT_FOUND here is an answer (not run, or run so long ago that the mirror has it)
    const result = await scheduledResult(client, mirror, scheduled, opts.receiptProbeMs, 1);
    return result ? { status: 'executed', result, scheduledTransactionId: scheduled } : { status: 'gone', scheduledTransactionId: scheduled };
  }
  const scheduledTransactionId = info.scheduledTransactionId ? info.scheduledTransactionId.toString() : (opts.scheduledTransactionId ?? undefined);
  const body = info.schedulableTransactionBody;
  const transfers = body?.cryptoTransfer;
  const hbarLegs = transfers?.transfers?.accountAmounts?.map((a) => ({ account: accountOf(a.accountID), tinybars: num(a.amount) }));
  const otherContent = !transfers || (transfers.tokenTransfers?.length ?? 0) > 0 || (transfers.transfers?.accountAmounts ?? []).some((a) => a.isApproval || !a.accountID?.accountNum);
  const base: ScheduleState = {
    status: 'pending',
    scheduledTransactionId,
    creatorAccountId: info.creatorAccountId?.toString(),
    adminKeyPresent: info.adminKey !== null,
    memo: info.scheduleMemo ?? '',
    expiresAt: info.expirationTime ? info.expirationTime.toDate() : undefined,
    hbarLegs,
    otherContent,
  };
  if (info.deleted) return { ...base, status: 'deleted' };
  if (!info.executed) return base;
  if (!scheduledTransactionId) throw new LedgerError('PENDING', `schedule ${scheduleId} executed but names no scheduled transaction`, { retryable: true });
  const result = await scheduledResult(client, mirror, scheduledTransactionId, opts.receiptProbeMs);
  // executed on the ledger, its result not readable yet (receipt probe timed out, mirror behind): ask again later
  if (!result) throw new LedgerError('PENDING', `schedule ${scheduleId} executed; its result is not readable yet`, { retryable: true });
  return { ...base, status: 'executed', result };
}
