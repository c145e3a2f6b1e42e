// Idempotent ledger writes (DESIGN.md section 5). The caller names the write with an idempotency key
// (e.g. `${workflowId}/${activityId}`). The frozen, signed transaction's id and bytes are recorded in
// PostgreSQL BEFORE it is submitted. A retry with the same key looks the recorded transaction up first
// (receipt from the node, then the mirror) and reuses its outcome; while the transaction is still
// inside its valid window the very same bytes are re-sent (the network deduplicates by transaction
// id, so this can never apply twice); a new transaction is only built once the old one provably
// never reached consensus: its valid window has passed (plus the mirror's lag) and neither the node
// nor the mirror knows it.
import { Client, PrivateKey, TopicMessageSubmitTransaction, Transaction } from '@hashgraph/sdk';
import type { Sql } from 'postgres';
import {
  findSubmission,
  insertSubmission,
  markSubmission,
  replaceSubmission,
  type LedgerSubmissionRow,
} from '../db/queries/ledgerSubmissions.js';
import { CheckedTransaction } from './checkedTransaction.js';
import { LedgerError, toLedgerError } from './errors.js';
import { signTransaction } from '@agent-passport/core/keys';
import type { MirrorClient, MirrorTransaction } from './mirror.js';
import { queryReceipt, summarizeReceipt, transactionIdOf, transactionIdsOf, type ReceiptSummary } from './operations.js';
import { countLedgerSubmission } from '../telemetry/metrics.js';
import { withSpan } from '../telemetry/spans.js';

export interface SubmitDeps {
  sql: Sql;
  client: Client;
  mirror?: MirrorClient;
  /** how far the mirror may lag behind consensus (default 10 s) */
  mirrorLagMs?: number;
  /** receipt lookups of a recorded transaction wait at most this long (default 5 s) */
  receiptProbeMs?: number;
  now?: () => number;
}

/**
 * What the submitter sends, in one of two forms (issue 19 item 1: the operator signs only what the
 * service built itself or what passed a checker):
 *
 *   build    the service's own transaction, returned UNFROZEN: the submitter freezes it for its
 *            client (transaction id of the operator, our node) and signs it with `signers` and the
 *            operator. A frozen transaction here (bytes built elsewhere) is refused when the client
 *            has an operator, so client bytes can never pick up the operator's signature by accident.
 *   checked  client-supplied bytes, decoded and judged by their checker (ledger/transferCheck.ts
 *            checkPayment, ledger/scheduleSignCheck.ts checkScheduleSign) into a CheckedTransaction;
 *            submitted as they are, signed by the operator only when the checker says the operator
 *            pays for them. The function runs only when a new transaction is prepared (not when a
 *            recorded one is looked up or re-sent), so its checks see the bytes at that moment.
 */
export interface IdempotentSubmitInput {
  idempotencyKey: string;
  /** label stored with the record (e.g. 'hbar_transfer', 'nft_mint') */
  kind?: string;
  /** builds the service's own transaction (unfrozen) */
  build?: () => Transaction | Promise<Transaction>;
  /** client bytes that passed their checker (throws when they do not) */
  checked?: () => CheckedTransaction | Promise<CheckedTransaction>;
  /** keys that must sign a built transaction besides the client's operator (e.g. the escrow key) */
  signers?: PrivateKey[];
  /** test hooks: run after the record is written / after the node accepted the transaction */
  hooks?: {
    beforeSubmit?: (transactionId: string) => void | Promise<void>;
    afterSubmit?: (transactionId: string) => void | Promise<void>;
  };
}

export interface SubmitResult {
  transactionId: string;
  receipt: ReceiptSummary;
  /** true when the outcome came from an earlier attempt (no new submission was made by this call) */
  reused: boolean;
  /** where the outcome was learned */
  source: 'submit' | 'record' | 'receipt' | 'mirror';
}

interface Prepared {
  tx: Transaction;
  transactionId: string;
  transactionIds: string[];
  bytes: Uint8Array;
  validUntil: Date;
}

function inputError(message: string, hint?: string): LedgerError {
  return new LedgerError('INVALID_TRANSACTION', message, { phase: 'input', retryable: false, hint });
}

async function prepareNew(client: Client, input: IdempotentSubmitInput): Promise<Prepared> {
  if ((input.build === undefined) === (input.checked === undefined)) throw inputError('a ledger write takes exactly one of build and checked');
  if (input.checked) {
    const c = await input.checked();
    if (!CheckedTransaction.isChecked(c)) throw inputError('client bytes are submitted only as a CheckedTransaction from their checker');
    if (input.signers?.length) throw inputError('client bytes are not signed with service keys');
    if (c.operatorPays && client.operatorAccountId) await c.transaction.signWithOperator(client);
    return describe(c.transaction);
  }
  const tx = await input.build!();
  if (tx.isFrozen()) {
    // frozen bytes come from elsewhere: only a client without an operator (nothing of ours to add) may send them as built
    if (client.operatorAccountId) throw inputError('build() returned a frozen transaction', 'client bytes go through their checker (checked), never through build');
  } else tx.freezeWith(client);
  for (const key of input.signers ?? []) await signTransaction(tx, key);
  if (client.operatorAccountId) await tx.signWithOperator(client);
  return describe(tx);
}

function describe(tx: Transaction): Prepared {
  const transactionId = transactionIdOf(tx);
  const validStart = tx.transactionId!.validStart!.toDate();
  const durationSec = tx.transactionValidDuration ?? 120;
  return {
    tx,
    transactionId,
    transactionIds: transactionIdsOf(tx),
    bytes: tx.toBytes(),
    validUntil: new Date(validStart.getTime() + durationSec * 1000),
  };
}

function lastId(row: { transaction_id: string; transaction_ids: string[] }): string {
  const ids = Array.isArray(row.transaction_ids) ? row.transaction_ids : [];
  return ids.length > 0 ? ids[ids.length - 1] : row.transaction_id;
}

function mirrorReceipt(t: MirrorTransaction, transactionId: string): ReceiptSummary {
  const out: ReceiptSummary = { status: t.result, transactionId };
  const minted = (t.nft_transfers ?? []).filter((n) => n.sender_account_id == null).map((n) => String(n.serial_number));
  if (minted.length > 0) out.serials = minted;
  if (t.entity_id) {
    if (t.name === 'SCHEDULECREATE') out.scheduleId = t.entity_id;
    if (t.name === 'TOKENCREATION') out.tokenId = t.entity_id;
    if (t.name === 'CONSENSUSCREATETOPIC') out.topicId = t.entity_id;
    if (t.name === 'CRYPTOCREATEACCOUNT') out.accountId = t.entity_id;
  }
  return out;
}

export class IdempotentSubmitter {
  constructor(private readonly deps: SubmitDeps) {}

  private now(): number {
    return this.deps.now ? this.deps.now() : Date.now();
  }

  /**
   * Writes `input` once (see the file's comment). Each call is one span `ledger.submit` (kind, key,
   * transaction id, outcome: never bytes or keys) and one count in
   * agent_passport_ledger_submissions_total{kind, outcome} (telemetry/metrics.ts).
   */
  async submit(input: IdempotentSubmitInput): Promise<SubmitResult> {
    return withSpan('ledger.submit', { 'ledger.kind': input.kind ?? 'transaction', 'ledger.idempotency_key': input.idempotencyKey }, async (span) => {
      try {
        const r = await this.submitRecorded(input);
        countLedgerSubmission(input.kind, r.reused ? 'reused' : 'succeeded');
        span?.setAttributes({ 'ledger.transaction_id': r.transactionId, 'ledger.status': r.receipt.status, 'ledger.outcome': r.reused ? 'reused' : 'succeeded', 'ledger.source': r.source });
        return r;
      } catch (err) {
        const le = err instanceof LedgerError ? err : toLedgerError(err);
        const outcome = le.retryable ? 'retryable' : 'failed';
        countLedgerSubmission(input.kind, outcome);
        span?.setAttributes({ 'ledger.status': le.status, 'ledger.outcome': outcome, ...(le.transactionId ? { 'ledger.transaction_id': le.transactionId } : {}) });
        throw err;
      }
    });
  }

  private async submitRecorded(input: IdempotentSubmitInput): Promise<SubmitResult> {
    const { sql, client } = this.deps;
    for (let round = 0; round < 4; round++) {
      const row = await findSubmission(sql, input.idempotencyKey);
      if (!row) {
        const prepared = await prepareNew(client, input);
        const inserted = await insertSubmission(sql, {
          idempotencyKey: input.idempotencyKey,
          kind: input.kind ?? 'transaction',
          transactionId: prepared.transactionId,
          transactionIds: prepared.transactionIds,
          transactionBytes: prepared.bytes,
          validUntil: prepared.validUntil,
        });
        if (!inserted) continue; // another worker recorded this key first: resolve theirs
        return this.send(inserted, prepared.tx, input, false);
      }
      if (row.status === 'succeeded') {
        return { transactionId: row.transaction_id, receipt: row.receipt as unknown as ReceiptSummary, reused: true, source: 'record' };
      }
      if (row.status === 'failed') {
        throw new LedgerError(row.ledger_status ?? 'UNKNOWN', `ledger write ${input.idempotencyKey} failed earlier with ${row.ledger_status}`, {
          phase: 'receipt',
          retryable: false,
          transactionId: row.transaction_id,
        });
      }
      const resolved = await this.resolvePending(row, input);
      if (resolved) return resolved;
    }
    throw new LedgerError('PENDING', `could not settle the state of ledger write ${input.idempotencyKey}`, { retryable: true });
  }

  /** Looks a recorded transaction up; re-sends or replaces it when that is provably safe. */
  private async resolvePending(row: LedgerSubmissionRow, input: IdempotentSubmitInput): Promise<SubmitResult | null> {
    const { sql, client, mirror } = this.deps;
    const key = row.idempotency_key;
    const probeId = lastId(row);

    // 1. the node's receipt (nodes keep receipts for about 3 minutes after consensus)
    try {
      const r = await queryReceipt(client, probeId, { timeoutMs: this.deps.receiptProbeMs ?? 5_000 });
      if (r.found) {
        const receipt = { ...r.receipt, transactionId: row.transaction_id };
        if (row.transaction_ids.length > 1) receipt.chunkTransactionIds = row.transaction_ids;
        await markSubmission(sql, key, row.transaction_id, 'succeeded', receipt.status, receipt as never);
        return { transactionId: row.transaction_id, receipt, reused: true, source: 'receipt' };
      }
    } catch (err) {
      const le = toLedgerError(err, { transactionId: row.transaction_id });
      if (le.phase === 'receipt' && !le.retryable) {
        await markSubmission(sql, key, row.transaction_id, 'failed', le.status, null);
        throw le;
      }
      if (!le.retryable) throw le;
    }

    // 2. the mirror (the durable record once receipts are gone)
    if (mirror) {
      const t = await mirror.getTransaction(probeId);
      if (t) {
        const receipt = mirrorReceipt(t, row.transaction_id);
        if (t.result === 'SUCCESS') {
          await markSubmission(sql, key, row.transaction_id, 'succeeded', 'SUCCESS', receipt as never);
          return { transactionId: row.transaction_id, receipt, reused: true, source: 'mirror' };
        }
        await markSubmission(sql, key, row.transaction_id, 'failed', t.result, receipt as never);
        throw new LedgerError(t.result, `transaction ${row.transaction_id} reached consensus with status ${t.result}`, {
          phase: 'receipt',
          retryable: false,
          transactionId: row.transaction_id,
        });
      }
    }

    const lag = this.deps.mirrorLagMs ?? 10_000;
    const expired = this.now() > new Date(row.valid_until).getTime() + lag;
    if (!expired) {
      // 3a. still inside its valid window: re-send the recorded bytes. The network accepts it at most
      // once; DUPLICATE_TRANSACTION means an earlier send got through and we wait for its receipt.
      const tx = Transaction.fromBytes(new Uint8Array(row.transaction_bytes));
      return this.send(row, tx, input, true);
    }
    if (!mirror) {
      // without a mirror there is no proof the old transaction never executed
      throw new LedgerError('PENDING', `transaction ${row.transaction_id} is past its valid window and no mirror is configured to prove it never executed`, {
        retryable: false,
        transactionId: row.transaction_id,
        hint: 'configure MIRROR_URL so pending ledger writes can be resolved',
      });
    }
    // 3b. provably never reached consensus: valid window over, no receipt, no mirror record
    const prepared = await prepareNew(client, input);
    const replaced = await replaceSubmission(sql, key, row.transaction_id, {
      transactionId: prepared.transactionId,
      transactionIds: prepared.transactionIds,
      transactionBytes: prepared.bytes,
      validUntil: prepared.validUntil,
    });
    if (!replaced) return null; // someone else replaced it concurrently: start over
    return this.send(replaced, prepared.tx, input, false);
  }

  private async send(row: LedgerSubmissionRow, tx: Transaction, input: IdempotentSubmitInput, resend: boolean): Promise<SubmitResult> {
    const { sql, client } = this.deps;
    const key = row.idempotency_key;
    const transactionId = row.transaction_id;
    try {
      await input.hooks?.beforeSubmit?.(transactionId);
      let receiptSource;
      if (tx instanceof TopicMessageSubmitTransaction) {
        const responses = await tx.executeAll(client);
        await input.hooks?.afterSubmit?.(transactionId);
        receiptSource = await responses[responses.length - 1].getReceipt(client);
      } else {
        const response = await tx.execute(client);
        await input.hooks?.afterSubmit?.(transactionId);
        receiptSource = await response.getReceipt(client);
      }
      const receipt = summarizeReceipt(receiptSource, transactionId);
      if (row.transaction_ids.length > 1) receipt.chunkTransactionIds = row.transaction_ids;
      await markSubmission(sql, key, transactionId, 'succeeded', receipt.status, receipt as never);
      return { transactionId, receipt, reused: false, source: 'submit' };
    } catch (err) {
      const le = toLedgerError(err, { transactionId });
      if (le.status === 'DUPLICATE_TRANSACTION') {
        // an earlier send of these exact bytes was accepted: its receipt is the outcome
        const r = await queryReceipt(client, lastId(row), { timeoutMs: 30_000, maxAttempts: 60 });
        if (r.found) {
          const receipt = { ...r.receipt, transactionId };
          await markSubmission(sql, key, transactionId, 'succeeded', receipt.status, receipt as never);
          return { transactionId, receipt, reused: true, source: 'receipt' };
        }
        throw new LedgerError('PENDING', `transaction ${transactionId} was accepted earlier and has no receipt yet`, { retryable: true, transactionId });
      }
      if (le.phase === 'receipt' && !le.retryable) {
        await markSubmission(sql, key, transactionId, 'failed', le.status, null);
        throw le;
      }
      if (le.phase === 'precheck' && !le.retryable && le.status !== 'TRANSACTION_EXPIRED') {
        // rejected before consensus; when re-sending, the receipt lookup above already came up empty
        await markSubmission(sql, key, transactionId, 'failed', le.status, null);
        throw le;
      }
      if (le.status === 'TRANSACTION_EXPIRED') {
        // the recorded bytes can no longer be sent; a later retry proves non-execution and rebuilds
        throw new LedgerError('PENDING', `transaction ${transactionId} expired before it was accepted`, { retryable: true, transactionId, cause: err });
      }
      // unknown outcome (timeout, BUSY exhausted, transport): keep the record pending; retry later
      void resend;
      throw le.retryable ? le : new LedgerError(le.status, le.message, { retryable: true, transactionId, phase: le.phase, cause: err });
    }
  }
}

/** One-shot helper: idempotently submit a transaction under a key. */
export function idempotentSubmit(deps: SubmitDeps, input: IdempotentSubmitInput): Promise<SubmitResult> {
  return new IdempotentSubmitter(deps).submit(input);
}
