/**
 * The escrow audit (issue 19 item 3, `npm run audit:escrow`): from the ledger alone, the escrow
 * account's balance equals the sum of the funded, unpaid escrows, to the tinybar.
 *
 * Read from the mirror: the escrow account's balance and every successful transaction that moved
 * HBAR in or out of it, and the marketplace topic's messages. Every movement must belong to a task
 * (the memo "task <id> fund|topup" of a scheduled transfer in, "task <id> payout|refund" of a
 * transfer out); the escrow never pays a fee (it is never a transaction's payer); per task, what
 * went out never exceeds what came in, and a task whose last topic message says it is completed or
 * cancelled holds nothing any more. The tasks still holding money are the funded, unpaid escrows,
 * and their sum must be the balance. (A task's projection is not compared: a poster may sign its
 * schedule on the ledger directly, and the workflow learns of it only at its next step.)
 */
import { parseTaskMessage, type TaskMessage } from '../domain/market.js';
import type { MirrorClient, MirrorTransaction } from './mirror.js';

export interface EscrowTaskFigures {
  taskId: string;
  inTinybars: bigint;
  outTinybars: bigint;
  /** in - out: what the escrow holds for the task */
  heldTinybars: bigint;
  payouts: number;
  refunds: number;
  /** the task's last topic message */
  status: string | null;
  escrowStatus: string | null;
}

export interface EscrowAuditReport {
  escrowAccountId: string;
  balanceTinybars: bigint;
  depositsTinybars: bigint;
  payoutsTinybars: bigint;
  refundsTinybars: bigint;
  /** the sum of what the tasks still hold: the funded, unpaid escrows */
  heldTinybars: bigint;
  /** balance - held (0 when the audit holds) */
  differenceTinybars: bigint;
  transactions: number;
  tasks: number;
  /** tasks holding money (funded, unpaid) */
  openEscrows: number;
  violations: string[];
  ok: boolean;
}

export interface EscrowAuditInput {
  escrowAccountId: string;
  balanceTinybars: bigint;
  /** every successful transaction with an HBAR transfer of the escrow account (parents and scheduled children) */
  transactions: MirrorTransaction[];
  /** the marketplace topic's messages (parsed) */
  messages: TaskMessage[];
}

const MEMO = /^task (\S+) (fund|topup|payout|refund)$/;
const memoOf = (t: MirrorTransaction): string => (typeof t.memo_base64 === 'string' ? Buffer.from(t.memo_base64, 'base64').toString('utf8') : '');
const amountOf = (t: MirrorTransaction, account: string): bigint => (t.transfers ?? []).filter((x) => x.account === account).reduce((s, x) => s + BigInt(x.amount), 0n);
const payerOf = (t: MirrorTransaction): string => t.transaction_id.split(/[-@]/)[0];

/** The audit's arithmetic over what the mirror answered (pure). */
export function auditEscrowFigures(a: EscrowAuditInput): EscrowAuditReport {
  const violations: string[] = [];
  const byTask = new Map<string, EscrowTaskFigures>();
  const figures = (taskId: string) => {
    let f = byTask.get(taskId);
    if (!f) byTask.set(taskId, (f = { taskId, inTinybars: 0n, outTinybars: 0n, heldTinybars: 0n, payouts: 0, refunds: 0, status: null, escrowStatus: null }));
    return f;
  };
  let deposits = 0n;
  let payouts = 0n;
  let refunds = 0n;
  for (const t of a.transactions) {
    const amount = amountOf(t, a.escrowAccountId);
    if (!t.scheduled && payerOf(t) === a.escrowAccountId) violations.push(`transaction ${t.transaction_id}: the escrow paid a transaction fee`);
    if (amount === 0n) continue;
    const m = MEMO.exec(memoOf(t));
    if (!m) {
      violations.push(`transaction ${t.transaction_id} moved ${amount} tinybars ${amount > 0n ? 'into' : 'out of'} the escrow without a task memo`);
      continue;
    }
    const [, taskId, kind] = m;
    const f = figures(taskId);
    const inbound = kind === 'fund' || kind === 'topup';
    if (inbound !== amount > 0n) {
      violations.push(`transaction ${t.transaction_id} (${kind} of task ${taskId}) moved ${amount} tinybars the wrong way`);
      continue;
    }
    if (inbound) {
      f.inTinybars += amount;
      deposits += amount;
    } else {
      f.outTinybars -= amount;
      if (kind === 'payout') {
        f.payouts++;
        payouts -= amount;
      } else {
        f.refunds++;
        refunds -= amount;
      }
    }
  }
  const last = new Map<string, TaskMessage>();
  for (const m of a.messages) {
    const seen = last.get(m.taskId);
    if (!seen || m.seq >= seen.seq) last.set(m.taskId, m);
  }
  let held = 0n;
  let open = 0;
  for (const f of byTask.values()) {
    f.heldTinybars = f.inTinybars - f.outTinybars;
    const msg = last.get(f.taskId);
    f.status = msg?.status ?? null;
    f.escrowStatus = msg?.escrowStatus ?? null;
    held += f.heldTinybars;
    if (f.heldTinybars > 0n) open++;
    if (f.heldTinybars < 0n) violations.push(`task ${f.taskId}: paid out ${f.outTinybars} tinybars of ${f.inTinybars} escrowed`);
    if (f.payouts > 1 || f.refunds > 1 || (f.payouts > 0 && f.refunds > 0)) violations.push(`task ${f.taskId}: ${f.payouts} payouts and ${f.refunds} refunds`);
    if (!msg) violations.push(`task ${f.taskId}: escrow movements but no marketplace topic message`);
    else if ((msg.status === 'completed' || msg.status === 'cancelled') && f.heldTinybars !== 0n) {
      violations.push(`task ${f.taskId} is ${msg.status} (escrow ${msg.escrowStatus}) and the escrow still holds ${f.heldTinybars} tinybars for it`);
    }
  }
  const difference = a.balanceTinybars - held;
  if (difference !== 0n) violations.push(`escrow balance ${a.balanceTinybars} tinybars != ${held} tinybars held for funded, unpaid tasks (difference ${difference})`);
  return {
    escrowAccountId: a.escrowAccountId,
    balanceTinybars: a.balanceTinybars,
    depositsTinybars: deposits,
    payoutsTinybars: payouts,
    refundsTinybars: refunds,
    heldTinybars: held,
    differenceTinybars: difference,
    transactions: a.transactions.length,
    tasks: byTask.size,
    openEscrows: open,
    violations,
    ok: violations.length === 0,
  };
}

/**
 * Reads the escrow account's balance, its transactions and the marketplace topic from the mirror and
 * audits them. The balance is read last, after the transactions, and the whole read is repeated when
 * a movement landed meanwhile, so the figures belong to one moment of the ledger.
 */
export async function auditEscrow(mirror: MirrorClient, opts: { escrowAccountId: string; marketplaceTopicId: string }): Promise<EscrowAuditReport> {
  for (let attempt = 0; ; attempt++) {
    const account = await mirror.getAccount(opts.escrowAccountId);
    if (!account) throw new Error(`the mirror does not know the escrow account ${opts.escrowAccountId}`);
    const transactions = await mirror.collect<MirrorTransaction>(
      `/transactions?account.id=${encodeURIComponent(opts.escrowAccountId)}&result=success&order=asc&limit=100`,
      'transactions',
      1_000_000,
    );
    const raw = await mirror.collect<{ message: string; sequence_number: number }>(`/topics/${encodeURIComponent(opts.marketplaceTopicId)}/messages?order=asc&limit=100`, 'messages', 1_000_000);
    const after = await mirror.getAccount(opts.escrowAccountId);
    const balance = BigInt(after!.balance.balance);
    if (balance !== BigInt(account.balance.balance) && attempt < 5) continue; // something moved while reading: read again
    const messages = raw.map((m) => parseTaskMessage(Buffer.from(m.message, 'base64').toString('utf8'))).filter((m): m is TaskMessage => m !== null);
    return auditEscrowFigures({ escrowAccountId: opts.escrowAccountId, balanceTinybars: balance, transactions, messages });
  }
}

/** The figures as the command prints them. */
export function formatEscrowAudit(r: EscrowAuditReport): string {
  const hbar = (t: bigint) => `${t} tinybars (${(Number(t) / 1e8).toFixed(8)} HBAR)`;
  const rows: [string, string][] = [
    ['escrow account', r.escrowAccountId],
    ['balance', hbar(r.balanceTinybars)],
    ['held for funded, unpaid tasks', hbar(r.heldTinybars)],
    ['difference', hbar(r.differenceTinybars)],
    ['deposits (fund, top-up)', hbar(r.depositsTinybars)],
    ['payouts', hbar(r.payoutsTinybars)],
    ['refunds', hbar(r.refundsTinybars)],
    ['transactions / tasks / open escrows', `${r.transactions} / ${r.tasks} / ${r.openEscrows}`],
  ];
  const w = Math.max(...rows.map(([k]) => k.length));
  const lines = rows.map(([k, v]) => `| ${k.padEnd(w)} | ${v} |`);
  if (r.violations.length) lines.push(`VIOLATIONS (${r.violations.length}):`, ...r.violations.slice(0, 50).map((v) => `  - ${v}`));
  else lines.push('the escrow balance equals the funded, unpaid escrows, to the tinybar');
  return lines.join('\n');
}
