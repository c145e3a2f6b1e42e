/**
 * Queries of payments: every x402 payment the API accepted, recorded once per ledger transaction.
 * 'verified': recorded (with its request's claim) before any money moved; 'settled': the ledger took
 * it; 'refunded': paid back; 'failed': the settlement failed for good and nothing moved.
 */
import type { Sql, TransactionSql } from 'postgres';

type Q = Sql | TransactionSql;

export type PaymentStatus = 'verified' | 'settled' | 'refunded' | 'failed';

export interface PaymentRow {
  id: bigint;
  transaction_id: string;
  network: string;
  payer: string;
  pay_to: string;
  amount_tinybars: bigint;
  resource: string;
  description: string | null;
  status: PaymentStatus;
  settle_response: Record<string, unknown> | null;
  refund_transaction_id: string | null;
  /** end of the payment transaction's validity window (null for rows written before it was recorded) */
  valid_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewPayment {
  transactionId: string;
  network: string;
  payer: string;
  payTo: string;
  amountTinybars: bigint;
  resource: string;
  description?: string;
  status: PaymentStatus;
  settleResponse?: Record<string, unknown>;
  validUntil?: Date;
}

/** Records a payment; returns null when this transaction id was already recorded (a replay). */
export async function insertPayment(sql: Q, p: NewPayment): Promise<PaymentRow | null> {
  const rows = await sql<PaymentRow[]>`
    insert into payments (transaction_id, network, payer, pay_to, amount_tinybars, resource, description, status, settle_response, valid_until)
    values (${p.transactionId}, ${p.network}, ${p.payer}, ${p.payTo}, ${p.amountTinybars.toString()}, ${p.resource},
            ${p.description ?? null}, ${p.status}, ${p.settleResponse ? sql.json(p.settleResponse as never) : null}, ${p.validUntil ?? null})
    on conflict (transaction_id) do nothing
    returning *`;
  return rows[0] ?? null;
}

export async function findPaymentByTransactionId(sql: Q, transactionId: string): Promise<PaymentRow | null> {
  const rows = await sql<PaymentRow[]>`select * from payments where transaction_id = ${transactionId}`;
  return rows[0] ?? null;
}

export async function markPaymentSettled(sql: Sql, transactionId: string, settleResponse: Record<string, unknown>): Promise<void> {
  await sql`
    update payments set status = 'settled', settle_response = ${sql.json(settleResponse as never)}, updated_at = now()
     where transaction_id = ${transactionId}`;
}

export async function markPaymentRefunded(sql: Sql, transactionId: string, refundTransactionId: string): Promise<void> {
  await sql`
    update payments set status = 'refunded', refund_transaction_id = ${refundTransactionId}, updated_at = now()
     where transaction_id = ${transactionId} and status <> 'refunded'`;
}

export async function listPaymentsByPayer(sql: Sql, payer: string, limit = 100): Promise<PaymentRow[]> {
  return sql<PaymentRow[]>`select * from payments where payer = ${payer} order by created_at desc limit ${limit}`;
}

/** Moves a claimed ('verified') payment to 'settled'; false when another request got there first. */
export async function markPaymentSettledIfVerified(sql: Sql, transactionId: string, settleResponse: Record<string, unknown>): Promise<boolean> {
  const rows = await sql`
    update payments set status = 'settled', settle_response = ${sql.json(settleResponse as never)}, updated_at = now()
     where transaction_id = ${transactionId} and status = 'verified'
    returning id`;
  return rows.length === 1;
}

/** Drops a claim whose settlement failed for good, so the row set only holds real payments. */
export async function deletePendingPayment(sql: Sql, transactionId: string): Promise<void> {
  await sql`delete from payments where transaction_id = ${transactionId} and status = 'verified'`;
}

/**
 * Marks a payment whose settlement failed for good ('failed': nothing moved on the ledger); only a
 * payment still 'verified' changes. Returns the status afterwards (null when there is no such payment).
 */
export async function markPaymentFailedIfVerified(sql: Q, transactionId: string): Promise<PaymentStatus | null> {
  const rows = await sql<{ status: PaymentStatus }[]>`
    with u as (
      update payments set status = 'failed', updated_at = now()
       where transaction_id = ${transactionId} and status = 'verified' returning status
    )
    select status from u union all select status from payments where transaction_id = ${transactionId} and status <> 'verified'`;
  return rows[0]?.status ?? null;
}

/** A payment without an outcome, with the request it paid for (if any): the payment reconciler's work list. */
export interface UnfinishedPayment {
  transactionId: string;
  status: 'verified' | 'settled';
  /** the request the payment paid for: its kind, status and workflow id; null when none was claimed */
  request: { kind: 'issuance' | 'upgrade'; status: string; workflowId: string } | null;
}

/**
 * Payments recorded more than `olderThanMs` ago that are neither refunded nor failed and whose request
 * did not end with its passport (issued) or upgrade (upgraded), oldest first.
 */
export async function listUnfinishedPayments(sql: Q, olderThanMs: number, limit: number): Promise<UnfinishedPayment[]> {
  const rows = await sql<{ transaction_id: string; status: 'verified' | 'settled'; kind: 'issuance' | 'upgrade' | null; request_status: string | null; workflow_id: string | null }[]>`
    select p.transaction_id, p.status,
           case when i.payment_transaction_id is not null then 'issuance' when u.payment_transaction_id is not null then 'upgrade' end as kind,
           coalesce(i.status, u.status) as request_status, coalesce(i.workflow_id, u.workflow_id) as workflow_id
      from payments p
      left join passport_issuances i on i.payment_transaction_id = p.transaction_id
      left join passport_upgrades u on u.payment_transaction_id = p.transaction_id
     where p.status in ('verified', 'settled')
       and p.created_at < now() - make_interval(secs => ${olderThanMs / 1000})
       and coalesce(i.status, u.status, 'none') not in ('issued', 'upgraded')
     order by p.created_at
     limit ${limit}`;
  return rows.map((r) => ({
    transactionId: r.transaction_id,
    status: r.status,
    request: r.kind ? { kind: r.kind, status: r.request_status!, workflowId: r.workflow_id! } : null,
  }));
}
