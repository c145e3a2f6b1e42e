/** Queries of payments: every x402 payment the API accepted, recorded once per ledger transaction. */
import type { Sql } from 'postgres';

export type PaymentStatus = 'verified' | 'settled' | 'refunded';

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
}

/** Records a payment; returns null when this transaction id was already recorded (a replay). */
export async function insertPayment(sql: Sql, p: NewPayment): Promise<PaymentRow | null> {
  const rows = await sql<PaymentRow[]>`
    insert into payments (transaction_id, network, payer, pay_to, amount_tinybars, resource, description, status, settle_response)
    values (${p.transactionId}, ${p.network}, ${p.payer}, ${p.payTo}, ${p.amountTinybars.toString()}, ${p.resource},
            ${p.description ?? null}, ${p.status}, ${p.settleResponse ? sql.json(p.settleResponse as never) : null})
    on conflict (transaction_id) do nothing
    returning *`;
  return rows[0] ?? null;
}

export async function findPaymentByTransactionId(sql: Sql, transactionId: string): Promise<PaymentRow | null> {
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
