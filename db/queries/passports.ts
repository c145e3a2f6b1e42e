/**
 * Queries of passports, passport_issuances and passport_upgrades (db/migrations/0004_passports.ts).
 * Claims take a transaction-scoped advisory lock on the account (issuance) or the passport
 * (upgrade), so the "one active passport / one pending request" checks and the insert are atomic.
 */
import type { Sql, TransactionSql } from 'postgres';
import { CHANNELS, notifyChange, RELOAD_ALL } from '../notify.js';
import { insertPayment, type NewPayment } from './payments.js';
import { appendEvents } from './events.js';

/** The cache key and NOTIFY payload of a passport (CHANNELS.passport): `${tokenId}/${serial}`. */
export function passportKey(tokenId: string, serial: number | bigint): string {
  return `${tokenId}/${serial}`;
}

export interface PassportRow {
  id: bigint;
  network: string;
  token_id: string;
  serial: bigint;
  account_id: string;
  did: string;
  tier: string;
  capabilities: string[];
  endpoint: string | null;
  issued_at: Date;
  revoked_at: Date | null;
  revoke_reason: string | null;
  payment_transaction_id: string;
  mint_transaction_id: string | null;
  deliver_transaction_id: string | null;
  workflow_id: string | null;
  created_at: Date;
  updated_at: Date;
}

/** 'failed': released without a refund, its payment was never confirmed settled (db/migrations/0007). */
export type IssuanceStatus = 'pending' | 'issued' | 'refused' | 'refunded' | 'failed';

/** The step a request failed at, stored as data (db/migrations/0015); null for a request that did not fail (or lost a race). */
export type IssuanceFailedStep = 'settle' | 'confirmSettlement' | 'mint' | 'deliver' | 'workflow start' | 'workflow';
export type UpgradeFailedStep = 'settle' | 'confirmSettlement' | 'metadata update' | 'workflow start' | 'workflow';
export type RequestFailedStep = IssuanceFailedStep | UpgradeFailedStep;

export interface IssuanceRow {
  payment_transaction_id: string;
  workflow_id: string;
  network: string;
  account_id: string;
  did: string;
  tier: string;
  capabilities: string[];
  endpoint: string | null;
  status: IssuanceStatus;
  token_id: string | null;
  serial: bigint | null;
  refund_transaction_id: string | null;
  error: string | null;
  failed_step: IssuanceFailedStep | null;
  /** the workflow run that took the claim to the ledger (migration 0055) */
  ledger_writes_run_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export type UpgradeStatus = 'pending' | 'upgraded' | 'refused' | 'refunded' | 'failed';

export interface UpgradeRow {
  payment_transaction_id: string;
  workflow_id: string;
  token_id: string;
  serial: bigint;
  account_id: string;
  old_tier: string;
  new_tier: string;
  status: UpgradeStatus;
  refund_transaction_id: string | null;
  error: string | null;
  failed_step: UpgradeFailedStep | null;
  /** the workflow run that took the claim to the ledger (migration 0055) */
  ledger_writes_run_id: string | null;
  created_at: Date;
  updated_at: Date;
}

// ------------------------------------------------------------------ passports

export async function findPassport(sql: Sql, tokenId: string, serial: number | bigint): Promise<PassportRow | null> {
  const rows = await sql<PassportRow[]>`select * from passports where token_id = ${tokenId} and serial = ${serial.toString()}`;
  return rows[0] ?? null;
}

export async function findActivePassportByAccount(sql: Sql, network: string, accountId: string): Promise<PassportRow | null> {
  const rows = await sql<PassportRow[]>`
    select * from passports where network = ${network} and account_id = ${accountId} and revoked_at is null`;
  return rows[0] ?? null;
}

/** Every passport row (the memory cache's full load, api/passports/cache.ts). */
export async function listAllPassports(sql: Sql): Promise<PassportRow[]> {
  return sql<PassportRow[]>`select * from passports`;
}

export async function listPassportsByAccount(sql: Sql, accountId: string, limit = 100): Promise<PassportRow[]> {
  return sql<PassportRow[]>`
    select * from passports where account_id = ${accountId}
     order by (revoked_at is null) desc, issued_at desc limit ${limit}`;
}

export async function listPassports(
  sql: Sql,
  filter: { network?: string; tokenId?: string; limit: number; offset: number },
): Promise<{ rows: PassportRow[]; total: number }> {
  const network = filter.network ?? null;
  const tokenId = filter.tokenId ?? null;
  const rows = await sql<PassportRow[]>`
    select * from passports
     where (${network}::text is null or network = ${network}) and (${tokenId}::text is null or token_id = ${tokenId})
     order by token_id, serial
     limit ${filter.limit} offset ${filter.offset}`;
  const [{ count }] = await sql<{ count: bigint }[]>`
    select count(*)::bigint as count from passports
     where (${network}::text is null or network = ${network}) and (${tokenId}::text is null or token_id = ${tokenId})`;
  return { rows, total: Number(count) };
}

export interface NewPassport {
  network: string;
  tokenId: string;
  serial: number;
  accountId: string;
  did: string;
  tier: string;
  capabilities: string[];
  endpoint?: string | null;
  issuedAtMs: number;
  paymentTransactionId: string;
  mintTransactionId?: string;
  deliverTransactionId?: string;
  workflowId?: string;
}

/**
 * Writes the projection row of an issued passport and marks its issuance issued, in one
 * transaction. Idempotent: a retried call finds the row and changes nothing.
 */
export async function recordIssuedPassport(sql: Sql, p: NewPassport): Promise<PassportRow> {
  return sql.begin(async (tx) => {
    const inserted = await tx<PassportRow[]>`
      insert into passports (network, token_id, serial, account_id, did, tier, capabilities, endpoint, issued_at,
                             payment_transaction_id, mint_transaction_id, deliver_transaction_id, workflow_id)
      values (${p.network}, ${p.tokenId}, ${p.serial}, ${p.accountId}, ${p.did}, ${p.tier}, ${tx.json(p.capabilities)},
              ${p.endpoint ?? null}, ${new Date(p.issuedAtMs)}, ${p.paymentTransactionId}, ${p.mintTransactionId ?? null},
              ${p.deliverTransactionId ?? null}, ${p.workflowId ?? null})
      on conflict (token_id, serial) do nothing
      returning *`;
    await notifyChange(tx, CHANNELS.passport, passportKey(p.tokenId, p.serial));
    await tx`
      update passport_issuances set status = 'issued', token_id = ${p.tokenId}, serial = ${p.serial}, updated_at = now()
       where payment_transaction_id = ${p.paymentTransactionId} and status = 'pending'`;
    if (inserted[0]) {
      // the owner's event, last in the transaction (it holds the events lock until commit)
      await appendEvents(tx, [
        {
          type: 'passport.issued',
          subject: passportKey(p.tokenId, p.serial),
          audience: [p.did],
          data: { tokenId: p.tokenId, serial: Number(p.serial), did: p.did, accountId: p.accountId, tier: p.tier, capabilities: p.capabilities, paymentTransactionId: p.paymentTransactionId },
          key: `passport.issued:${passportKey(p.tokenId, p.serial)}`,
        },
      ]);
      return inserted[0];
    }
    const rows = await tx<PassportRow[]>`select * from passports where token_id = ${p.tokenId} and serial = ${p.serial}`;
    return rows[0]!;
  }) as Promise<PassportRow>;
}

/** Marks a passport revoked; false when it was already revoked or does not exist. */
export async function markPassportRevoked(sql: Sql, tokenId: string, serial: number, reason: string | null, revokedAtMs: number): Promise<boolean> {
  return sql.begin(async (tx) => {
    const rows = await tx<{ did: string }[]>`
      update passports set revoked_at = ${new Date(revokedAtMs)}, revoke_reason = ${reason}, updated_at = now()
       where token_id = ${tokenId} and serial = ${serial} and revoked_at is null
      returning did`;
    if (rows.length === 1) {
      await notifyChange(tx, CHANNELS.passport, passportKey(tokenId, serial));
      const key = passportKey(tokenId, serial);
      await appendEvents(tx, [
        { type: 'passport.revoked', subject: key, audience: [rows[0]!.did], data: { tokenId, serial: Number(serial), did: rows[0]!.did, reason }, key: `passport.revoked:${key}` },
      ]);
    }
    return rows.length === 1;
  }) as Promise<boolean>;
}

// ------------------------------------------------------------------ issuances

export async function findIssuance(sql: Sql, paymentTransactionId: string): Promise<IssuanceRow | null> {
  const rows = await sql<IssuanceRow[]>`select * from passport_issuances where payment_transaction_id = ${paymentTransactionId}`;
  return rows[0] ?? null;
}

export async function findPendingIssuance(sql: Sql, network: string, accountId: string): Promise<IssuanceRow | null> {
  const rows = await sql<IssuanceRow[]>`
    select * from passport_issuances where network = ${network} and account_id = ${accountId} and status = 'pending'`;
  return rows[0] ?? null;
}

export interface IssuanceClaim {
  paymentTransactionId: string;
  workflowId: string;
  network: string;
  accountId: string;
  did: string;
  tier: string;
  capabilities: string[];
  endpoint?: string | null;
}

export type ClaimOutcome =
  | { claimed: true; row: IssuanceRow }
  | { claimed: false; reason: 'passport_already_exists' | 'request_pending'; row: IssuanceRow };

/**
 * Claims the account for an issuance paid by this payment. Refused (and recorded as 'refused', so
 * the payment can be refunded) when the account has an active passport or another pending
 * issuance. Idempotent per payment: a second call returns the first outcome.
 */
export async function claimIssuance(sql: Sql, c: IssuanceClaim): Promise<ClaimOutcome> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`passport-account:${c.network}:${c.accountId}`}))`;
    const existing = await tx<IssuanceRow[]>`select * from passport_issuances where payment_transaction_id = ${c.paymentTransactionId}`;
    if (existing[0]) {
      const row = existing[0];
      if (row.status === 'pending' || row.status === 'issued') return { claimed: true, row };
      return { claimed: false, reason: 'passport_already_exists', row };
    }
    const active = await tx`select 1 from passports where network = ${c.network} and account_id = ${c.accountId} and revoked_at is null`;
    const pending = await tx`select 1 from passport_issuances where network = ${c.network} and account_id = ${c.accountId} and status = 'pending'`;
    const refused = active.length > 0 || pending.length > 0;
    const rows = await tx<IssuanceRow[]>`
      insert into passport_issuances (payment_transaction_id, workflow_id, network, account_id, did, tier, capabilities, endpoint, status, error)
      values (${c.paymentTransactionId}, ${c.workflowId}, ${c.network}, ${c.accountId}, ${c.did}, ${c.tier}, ${tx.json(c.capabilities)},
              ${c.endpoint ?? null}, ${refused ? 'refused' : 'pending'},
              ${active.length > 0 ? 'passport_already_exists' : pending.length > 0 ? 'request_pending' : null})
      returning *`;
    if (!refused) return { claimed: true, row: rows[0]! };
    return { claimed: false, reason: active.length > 0 ? 'passport_already_exists' : 'request_pending', row: rows[0]! };
  }) as Promise<ClaimOutcome>;
}

/**
 * What recording a verified payment with its request's claim gave (recordIssuancePayment,
 * recordUpgradePayment): 'claimed' (new, or this payment's earlier claim still pending or done),
 * 'earlier' (this payment's earlier claim ended: refused, refunded or failed), 'refused' (the request
 * cannot be claimed now; NOTHING was recorded, no money moved), 'replayed' (the payment is recorded
 * for another request).
 */
export type RecordedRequest<Row, Reason extends string> =
  | { outcome: 'claimed'; row: Row }
  | { outcome: 'earlier'; row: Row }
  | { outcome: 'refused'; reason: Reason }
  | { outcome: 'replayed' };

/** The recorded payment of this id may be (re)used for a new claim: only a verified one with the same terms and no request yet. */
async function paymentFreeForClaim(tx: TransactionSql, p: NewPayment): Promise<'free' | 'absent' | 'taken'> {
  const [row] = await tx<{ status: string; amount_tinybars: bigint; pay_to: string; payer: string }[]>`
    select status, amount_tinybars, pay_to, payer from payments where transaction_id = ${p.transactionId} for update`;
  if (!row) return 'absent';
  const claimed = await tx`
    select 1 from passport_issuances where payment_transaction_id = ${p.transactionId}
    union all select 1 from passport_upgrades where payment_transaction_id = ${p.transactionId}`;
  const same = row.status === 'verified' && BigInt(row.amount_tinybars) === BigInt(p.amountTinybars) && row.pay_to === p.payTo && row.payer === p.payer;
  return claimed.length === 0 && same ? 'free' : 'taken';
}

/**
 * Records a VERIFIED (not yet settled) payment and claims the account for the issuance it pays, in
 * one transaction under the account's advisory lock, before any money moves (issue 23): the workflow
 * settles it. When the account has an active passport or another pending issuance nothing is
 * recorded (the payment never moves). Idempotent per payment.
 */
export async function recordIssuancePayment(sql: Sql, payment: NewPayment, c: IssuanceClaim): Promise<RecordedRequest<IssuanceRow, 'passport_already_exists' | 'request_pending'>> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`passport-account:${c.network}:${c.accountId}`}))`;
    const [existing] = await tx<IssuanceRow[]>`select * from passport_issuances where payment_transaction_id = ${c.paymentTransactionId}`;
    if (existing) {
      if (existing.network !== c.network || existing.account_id !== c.accountId) return { outcome: 'replayed' as const };
      return { outcome: existing.status === 'pending' || existing.status === 'issued' ? ('claimed' as const) : ('earlier' as const), row: existing };
    }
    const paid = await paymentFreeForClaim(tx, payment);
    if (paid === 'taken') return { outcome: 'replayed' as const };
    const active = await tx`select 1 from passports where network = ${c.network} and account_id = ${c.accountId} and revoked_at is null`;
    if (active.length > 0) return { outcome: 'refused' as const, reason: 'passport_already_exists' as const };
    const pending = await tx`select 1 from passport_issuances where network = ${c.network} and account_id = ${c.accountId} and status = 'pending'`;
    if (pending.length > 0) return { outcome: 'refused' as const, reason: 'request_pending' as const };
    if (paid === 'absent') await insertPayment(tx, { ...payment, status: 'verified' });
    const [row] = await tx<IssuanceRow[]>`
      insert into passport_issuances (payment_transaction_id, workflow_id, network, account_id, did, tier, capabilities, endpoint, status)
      values (${c.paymentTransactionId}, ${c.workflowId}, ${c.network}, ${c.accountId}, ${c.did}, ${c.tier}, ${tx.json(c.capabilities)}, ${c.endpoint ?? null}, 'pending')
      returning *`;
    return { outcome: 'claimed' as const, row: row! };
  }) as Promise<RecordedRequest<IssuanceRow, 'passport_already_exists' | 'request_pending'>>;
}

// ------------------------------------------------------------------ upgrades

export async function findUpgrade(sql: Sql, paymentTransactionId: string): Promise<UpgradeRow | null> {
  const rows = await sql<UpgradeRow[]>`select * from passport_upgrades where payment_transaction_id = ${paymentTransactionId}`;
  return rows[0] ?? null;
}

/** The upgrade of this passport a settled payment already claimed and that is not finished. */
export async function findPendingUpgrade(sql: Sql, tokenId: string, serial: number | bigint): Promise<UpgradeRow | null> {
  const rows = await sql<UpgradeRow[]>`
    select * from passport_upgrades where token_id = ${tokenId} and serial = ${serial.toString()} and status = 'pending'`;
  return rows[0] ?? null;
}

export interface UpgradeClaim {
  paymentTransactionId: string;
  workflowId: string;
  tokenId: string;
  serial: number;
  accountId: string;
  oldTier: string;
  newTier: string;
}

export type UpgradeClaimOutcome =
  | { claimed: true; row: UpgradeRow }
  | { claimed: false; reason: 'passport_not_found' | 'passport_upgrade_not_eligible' | 'request_pending'; row: UpgradeRow };

/** Claims the passport for an upgrade paid by this payment (its tier must still be oldTier). */
export async function claimUpgrade(sql: Sql, c: UpgradeClaim): Promise<UpgradeClaimOutcome> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`passport-nft:${c.tokenId}:${c.serial}`}))`;
    const existing = await tx<UpgradeRow[]>`select * from passport_upgrades where payment_transaction_id = ${c.paymentTransactionId}`;
    if (existing[0]) {
      const row = existing[0];
      if (row.status === 'pending' || row.status === 'upgraded') return { claimed: true, row };
      return { claimed: false, reason: 'passport_upgrade_not_eligible', row };
    }
    const [p] = await tx<PassportRow[]>`select * from passports where token_id = ${c.tokenId} and serial = ${c.serial} for update`;
    const pending = await tx`select 1 from passport_upgrades where token_id = ${c.tokenId} and serial = ${c.serial} and status = 'pending'`;
    const reason = !p || p.revoked_at
      ? 'passport_not_found'
      : p.tier !== c.oldTier || p.account_id !== c.accountId
        ? 'passport_upgrade_not_eligible'
        : pending.length > 0
          ? 'request_pending'
          : null;
    const rows = await tx<UpgradeRow[]>`
      insert into passport_upgrades (payment_transaction_id, workflow_id, token_id, serial, account_id, old_tier, new_tier, status, error)
      values (${c.paymentTransactionId}, ${c.workflowId}, ${c.tokenId}, ${c.serial}, ${c.accountId}, ${c.oldTier}, ${c.newTier},
              ${reason ? 'refused' : 'pending'}, ${reason})
      returning *`;
    if (!reason) return { claimed: true, row: rows[0]! };
    return { claimed: false, reason, row: rows[0]! };
  }) as Promise<UpgradeClaimOutcome>;
}

/**
 * Records a VERIFIED payment and claims the passport for the upgrade it pays, in one transaction
 * under the passport's advisory lock, before any money moves (issue 23). Refused (nothing recorded)
 * when the passport is gone, changed tier or owner, or has another pending upgrade.
 */
export async function recordUpgradePayment(
  sql: Sql,
  payment: NewPayment,
  c: UpgradeClaim,
): Promise<RecordedRequest<UpgradeRow, 'passport_not_found' | 'passport_upgrade_not_eligible' | 'request_pending'>> {
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(hashtext(${`passport-nft:${c.tokenId}:${c.serial}`}))`;
    const [existing] = await tx<UpgradeRow[]>`select * from passport_upgrades where payment_transaction_id = ${c.paymentTransactionId}`;
    if (existing) {
      if (existing.token_id !== c.tokenId || Number(existing.serial) !== c.serial || existing.account_id !== c.accountId || existing.new_tier !== c.newTier) {
        return { outcome: 'replayed' as const };
      }
      return { outcome: existing.status === 'pending' || existing.status === 'upgraded' ? ('claimed' as const) : ('earlier' as const), row: existing };
    }
    const paid = await paymentFreeForClaim(tx, payment);
    if (paid === 'taken') return { outcome: 'replayed' as const };
    const [p] = await tx<PassportRow[]>`select * from passports where token_id = ${c.tokenId} and serial = ${c.serial} for update`;
    if (!p || p.revoked_at) return { outcome: 'refused' as const, reason: 'passport_not_found' as const };
    if (p.tier !== c.oldTier || p.account_id !== c.accountId) return { outcome: 'refused' as const, reason: 'passport_upgrade_not_eligible' as const };
    const pending = await tx`select 1 from passport_upgrades where token_id = ${c.tokenId} and serial = ${c.serial} and status = 'pending'`;
    if (pending.length > 0) return { outcome: 'refused' as const, reason: 'request_pending' as const };
    if (paid === 'absent') await insertPayment(tx, { ...payment, status: 'verified' });
    const [row] = await tx<UpgradeRow[]>`
      insert into passport_upgrades (payment_transaction_id, workflow_id, token_id, serial, account_id, old_tier, new_tier, status)
      values (${c.paymentTransactionId}, ${c.workflowId}, ${c.tokenId}, ${c.serial}, ${c.accountId}, ${c.oldTier}, ${c.newTier}, 'pending')
      returning *`;
    return { outcome: 'claimed' as const, row: row! };
  }) as Promise<RecordedRequest<UpgradeRow, 'passport_not_found' | 'passport_upgrade_not_eligible' | 'request_pending'>>;
}

/** Applies a finished upgrade to the projection and marks the upgrade row; idempotent. */
export async function recordUpgradedPassport(
  sql: Sql,
  u: { paymentTransactionId: string; tokenId: string; serial: number; newTier: string; capabilities: string[] },
): Promise<void> {
  await sql.begin(async (tx) => {
    const done = await tx`
      update passport_upgrades set status = 'upgraded', updated_at = now()
       where payment_transaction_id = ${u.paymentTransactionId} and status = 'pending' returning 1`;
    if (done.length === 1) {
      const owners = await tx<{ did: string }[]>`
        update passports set tier = ${u.newTier}, capabilities = ${tx.json(u.capabilities)}, updated_at = now()
         where token_id = ${u.tokenId} and serial = ${u.serial} returning did`;
      await notifyChange(tx, CHANNELS.passport, passportKey(u.tokenId, u.serial));
      const key = passportKey(u.tokenId, u.serial);
      if (owners[0]) {
        await appendEvents(tx, [
          {
            type: 'passport.upgraded',
            subject: key,
            audience: [owners[0].did],
            data: { tokenId: u.tokenId, serial: Number(u.serial), did: owners[0].did, tier: u.newTier, capabilities: u.capabilities, paymentTransactionId: u.paymentTransactionId },
            key: `passport.upgraded:${u.paymentTransactionId}`,
          },
        ]);
      }
    }
  });
}

/**
 * Whether the workflow of a request already wrote to the ledger for it (a mint, delivery, burn or
 * metadata update keyed `${workflowId}/${paymentTransactionId}/...`, succeeded or still in doubt):
 * such a request must be finished (its steps are idempotent), never simply refunded.
 */
export async function requestLedgerWritesStarted(sql: Sql, workflowId: string, paymentTransactionId: string): Promise<boolean> {
  const prefix = `${workflowId}/${paymentTransactionId}/`.replace(/[\\%_]/g, (c) => `\\${c}`);
  const rows = await sql`
    select 1 from ledger_submissions where idempotency_key like ${`${prefix}%`} and status not in ('failed', 'expired') limit 1`;
  return rows.length > 0;
}

// ------------------------------------------------------------------ refunds

/**
 * Records the refund of a payment on whichever request row it paid for; `failedStep` (when the
 * refund undoes a failed step) is kept as data, an earlier one is not overwritten by null.
 */
export async function markRequestRefunded(sql: Sql, paymentTransactionId: string, refundTransactionId: string, error?: string, failedStep?: RequestFailedStep): Promise<void> {
  await sql.begin(async (tx) => {
    const issuances = await tx<{ did: string }[]>`
      update passport_issuances set status = 'refunded', refund_transaction_id = ${refundTransactionId},
             error = coalesce(${error ?? null}, error), failed_step = coalesce(${failedStep ?? null}, failed_step), updated_at = now()
       where payment_transaction_id = ${paymentTransactionId} and status in ('pending', 'refused', 'failed')
      returning did`;
    const upgrades = await tx<{ token_id: string; serial: bigint }[]>`
      update passport_upgrades set status = 'refunded', refund_transaction_id = ${refundTransactionId},
             error = coalesce(${error ?? null}, error), failed_step = coalesce(${failedStep ?? null}, failed_step), updated_at = now()
       where payment_transaction_id = ${paymentTransactionId} and status in ('pending', 'refused', 'failed')
      returning token_id, serial`;
    const upgraded = upgrades[0] ? (await tx<{ did: string }[]>`select did from passports where token_id = ${upgrades[0].token_id} and serial = ${upgrades[0].serial.toString()}`)[0] : undefined;
    // the payer's event (the DID the request was for), last in the transaction
    const did = issuances[0]?.did ?? upgraded?.did;
    if (!did) return;
    const request = issuances[0] ? 'issuance' : 'upgrade';
    await appendEvents(tx, [
      {
        type: 'payment.refunded',
        subject: paymentTransactionId,
        audience: [did],
        data: {
          paymentTransactionId,
          refundTransactionId,
          request,
          ...(upgrades[0] ? { tokenId: upgrades[0].token_id, serial: Number(upgrades[0].serial) } : {}),
          ...(error ? { reason: error } : {}),
        },
        key: `payment.refunded:${paymentTransactionId}`,
      },
    ]);
  });
}

/**
 * Turns a pending request whose workflow never ran or ended without a result into a refusal (its
 * payment is then refunded like a lost race; the wallet or passport is free at once). Returns the
 * request's status afterwards ('refused' unless it had already moved on), or null when unknown.
 */
export async function markRequestRefused(
  sql: Sql,
  paymentTransactionId: string,
  error: string,
  failedStep: 'workflow start' | 'workflow',
  endedRunId: string | null = null,
): Promise<string | null> {
  // only while no run but the one the caller saw end (endedRunId) has taken the claim to the ledger
  // (beginRequestLedgerWrites): a claim another run took stays 'pending' (answered as such) and is
  // finished by that run, or by running its workflow again
  const refused = await sql<{ status: string }[]>`
    with i as (
      update passport_issuances set status = 'refused', error = ${error}, failed_step = ${failedStep}, updated_at = now()
       where payment_transaction_id = ${paymentTransactionId} and status = 'pending' and (ledger_writes_run_id is null or ledger_writes_run_id = ${endedRunId}) returning status
    ), u as (
      update passport_upgrades set status = 'refused', error = ${error}, failed_step = ${failedStep}, updated_at = now()
       where payment_transaction_id = ${paymentTransactionId} and status = 'pending' and (ledger_writes_run_id is null or ledger_writes_run_id = ${endedRunId}) returning status
    )
    select status from i union all select status from u`;
  // a separate statement: its snapshot sees the write a concurrent update waited for
  return refused[0]?.status ?? (await requestClaimOfPayment(sql, paymentTransactionId))?.status ?? null;
}

/**
 * Marks the claim a payment paid for as taken to the ledger by a workflow run (`runId`; the step before
 * the mint or the metadata update), unless the claim already ended without its passport. Returns the claim's
 * status: 'pending' (marked now or before), 'issued' or 'upgraded' (a run finishing its own request
 * again), 'refused', 'refunded' or 'failed' (nothing may be written for it: its payment is owed back),
 * or null when no request claims the payment. This update and markRequestRefused's update the same
 * row, so PostgreSQL orders them and one of them wins (migration 0055).
 */
export async function beginRequestLedgerWrites(sql: Sql, paymentTransactionId: string, runId: string, workflowId: string): Promise<string | null> {
  // only a run of the claim's own workflow takes it (issue 26 item 2): another workflow's run finds 'not_own'
  const marked = await sql<{ status: string }[]>`
    with i as (
      update passport_issuances set ledger_writes_run_id = ${runId}
       where payment_transaction_id = ${paymentTransactionId} and status = 'pending' and workflow_id = ${workflowId} returning status
    ), u as (
      update passport_upgrades set ledger_writes_run_id = ${runId}
       where payment_transaction_id = ${paymentTransactionId} and status = 'pending' and workflow_id = ${workflowId} returning status
    )
    select status from i union all select status from u`;
  if (marked[0]) return marked[0].status;
  const claim = await findRequestClaim(sql, paymentTransactionId);
  if (!claim) return null;
  return claim.row.workflow_id === workflowId ? claim.row.status : 'not_own';
}

/**
 * The claim of the request a payment paid for (issuance or upgrade): its status and the workflow run
 * that took it to the ledger (beginRequestLedgerWrites), or null when no request claims the payment.
 */
export async function requestClaimOfPayment(sql: Sql, paymentTransactionId: string): Promise<{ status: string; ledgerWritesRunId: string | null } | null> {
  const rows = await sql<{ status: string; ledger_writes_run_id: string | null }[]>`
    select status, ledger_writes_run_id from passport_issuances where payment_transaction_id = ${paymentTransactionId}
    union all select status, ledger_writes_run_id from passport_upgrades where payment_transaction_id = ${paymentTransactionId}`;
  return rows[0] ? { status: rows[0].status, ledgerWritesRunId: rows[0].ledger_writes_run_id } : null;
}

/**
 * Releases a pending (or refused, refund owed) request whose payment could not be confirmed settled
 * (nothing to refund): the wallet or passport is free for a new request. Returns whether a row changed.
 */
export async function markRequestFailed(sql: Sql, paymentTransactionId: string, error: string, failedStep: RequestFailedStep | undefined, callerRunId: string): Promise<boolean> {
  // a pending claim another workflow run took to the ledger is that run's to end (it may be minting)
  const a = await sql`
    update passport_issuances set status = 'failed', error = ${error}, failed_step = coalesce(${failedStep ?? null}, failed_step), updated_at = now()
     where payment_transaction_id = ${paymentTransactionId}
       and (status = 'refused' or (status = 'pending' and (ledger_writes_run_id is null or ledger_writes_run_id = ${callerRunId}))) returning 1`;
  const b = await sql`
    update passport_upgrades set status = 'failed', error = ${error}, failed_step = coalesce(${failedStep ?? null}, failed_step), updated_at = now()
     where payment_transaction_id = ${paymentTransactionId}
       and (status = 'refused' or (status = 'pending' and (ledger_writes_run_id is null or ledger_writes_run_id = ${callerRunId}))) returning 1`;
  return a.length + b.length > 0;
}


/** The claim row of the request a payment paid for: its issuance or its upgrade (null when none claims it). */
export async function findRequestClaim(sql: Sql, paymentTransactionId: string): Promise<{ kind: 'issuance'; row: IssuanceRow } | { kind: 'upgrade'; row: UpgradeRow } | null> {
  const issuance = await findIssuance(sql, paymentTransactionId);
  if (issuance) return { kind: 'issuance', row: issuance };
  const upgrade = await findUpgrade(sql, paymentTransactionId);
  return upgrade ? { kind: 'upgrade', row: upgrade } : null;
}

/**
 * Bulk form of recordIssuedPassport's projection write for `npm run seed` (scripts/seed.ts): one
 * multi-row insert, rows already present (same token and serial, or an account's active passport)
 * left as they are, and one NOTIFY RELOAD_ALL for the batch instead of one per row. Returns how many
 * rows were new.
 */
export async function recordIssuedPassportsBulk(sql: Sql, passports: readonly NewPassport[]): Promise<number> {
  if (passports.length === 0) return 0;
  return sql.begin(async (tx) => {
    const rows = passports.map((p) => ({
      network: p.network,
      token_id: p.tokenId,
      serial: p.serial,
      account_id: p.accountId,
      did: p.did,
      tier: p.tier,
      capabilities: JSON.stringify(p.capabilities),
      endpoint: p.endpoint ?? null,
      issued_at: new Date(p.issuedAtMs),
      payment_transaction_id: p.paymentTransactionId,
      mint_transaction_id: p.mintTransactionId ?? null,
      workflow_id: p.workflowId ?? null,
    }));
    const inserted = await tx`
      insert into passports (network, token_id, serial, account_id, did, tier, capabilities, endpoint, issued_at,
                             payment_transaction_id, mint_transaction_id, workflow_id)
      select x.network, x.token_id, x.serial, x.account_id, x.did, x.tier, x.capabilities::jsonb, x.endpoint, x.issued_at,
             x.payment_transaction_id, x.mint_transaction_id, x.workflow_id
        from json_to_recordset(${tx.json(rows as never)}::json) as x(
               network text, token_id text, serial bigint, account_id text, did text, tier text, capabilities text,
               endpoint text, issued_at timestamptz, payment_transaction_id text, mint_transaction_id text, workflow_id text)
      on conflict do nothing
      returning id`;
    if (inserted.length > 0) await notifyChange(tx, CHANNELS.passport, RELOAD_ALL);
    return inserted.length;
  }) as Promise<number>;
}
