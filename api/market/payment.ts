/**
 * Payment of a task WITHOUT escrow (SPEC 4.4a prepare-payment and complete; DESIGN.md 8): the
 * poster pays the claimer directly with one CryptoTransfer, paid and signed by the poster's own
 * account: poster -price, claimer +(price - fee), treasury +fee (fee = the task's feeBps of the
 * price, rounded down), memo "task {taskId} payment" (domain/market.ts taskPayment). Nothing of it
 * passes through the escrow account.
 *
 *   preparePayment(...)      the frozen, unsigned transfer (base64), its transaction id, the resolved
 *                            account ids and amounts (POST /market/tasks/{taskId}/prepare-payment)
 *   directPaymentBytes(...)  for complete on a task without escrow (api/market/steps.ts): either
 *                            txBytes (signed, or unsigned + signature + publicKey, e.g. from /market/sign)
 *                            checked for exactly the expected transfer, or posterPrivateKey, which signs
 *                            the same transfer here in memory. Answers the base64 signed bytes, the
 *                            only thing the workflow's complete Update sees.
 */
import type { PrivateKey, PublicKey } from '@hashgraph/sdk';
import type { LedgerContext } from '../context.js';
import { ApiError } from '../errors.js';
import { accountPublicKey, requireOwnPrivateKey } from '../auth/ownKey.js';
import { completionRefusal, directPaymentRefusal, PAYMENT_RECIPE, taskPayment, tinybarsToHbar, type TaskRecord } from '../../domain/market.js';
import { parseHederaDid } from '@agent-passport/core/did';
import { clientNodeAccountIds } from '../../ledger/client.js';
import { parsePublicKey, signTransaction } from '@agent-passport/core/keys';
import {
  addDetachedSignature,
  buildPayment,
  checkPayment,
  decodeTransactionBase64,
  TransferCheckError,
  type ExpectedPayment,
} from '../../ledger/transferCheck.js';
import { partyOf, requireActivePassport } from './parties.js';
import { loadTask, refusalError, refuse, refuseEarly } from './updates.js';
import type { Market } from './state.js';

/** Non-escrow payment fields of a complete request. */
export interface DirectPaymentFields {
  txBytes?: string;
  signature?: string;
  publicKey?: string;
  posterPrivateKey?: string;
}

function accountOf(did: string | null, role: string): string {
  const parsed = did ? parseHederaDid(did) : null;
  if (!parsed) throw new ApiError('invalid_request', `The task has no ${role} account`, { hint: 'A task is paid after a claimer delivered' });
  return parsed.accountId;
}

/** The one payment completing `task` may make (amounts in tinybars). */
export function expectedPayment(ledger: LedgerContext, task: TaskRecord): ExpectedPayment {
  return taskPayment(task, { poster: accountOf(task.posterDid, 'poster'), claimer: accountOf(task.claimerDid, 'claimer'), treasury: ledger.deployment.treasury });
}

function nodesOf(ledger: LedgerContext): { build: string; accepted: string[] } {
  const accepted = clientNodeAccountIds(ledger.client).map((n) => n.toString());
  return { build: ledger.deployment.node?.accountId ?? accepted[0], accepted };
}

function paymentRefused(err: TransferCheckError): ApiError {
  return new ApiError(err.status === 403 ? 'auth_did_mismatch' : 'invalid_request', `The payment transfer was refused: ${err.message}`, { hint: err.hint ?? PAYMENT_RECIPE });
}

/** 400 unless the task may be paid directly now (delivered, a claimer, no escrow); 403 for another caller. */
export function checkPayable(task: TaskRecord, posterDid: string): void {
  refuseEarly('preparePayment', task, posterDid);
  refuse(directPaymentRefusal(task));
}

/**
 * The base64 signed payment for a complete request on a task without escrow, checked for exactly the
 * expected transfer signed by the poster. Throws ApiError 400 (or 403 for another payer or key).
 */
export async function directPaymentBytes(market: Market, task: TaskRecord, fields: DirectPaymentFields, opts: { now?: number; provenKey?: PrivateKey } = {}): Promise<string> {
  const now = opts.now ?? Date.now();
  const ledger = market.ledger;
  const expected = expectedPayment(ledger, task);
  const nodes = nodesOf(ledger);
  const accountKey = await accountPublicKey(ledger.keys, expected.payer, 'poster');
  try {
    let tx;
    if (fields.txBytes !== undefined) {
      tx = decodeTransactionBase64(fields.txBytes);
      if (fields.signature !== undefined || fields.publicKey !== undefined) {
        if (fields.signature === undefined || fields.publicKey === undefined) {
          throw new TransferCheckError('invalid_signature_encoding', 'signature and publicKey go together', 'Send both, or txBytes already signed');
        }
        let given: PublicKey;
        try {
          given = parsePublicKey(fields.publicKey);
        } catch {
          throw new TransferCheckError('invalid_signature_encoding', 'publicKey could not be parsed', 'Send the public key as DER hex (as /market/sign answers it) or raw hex');
        }
        addDetachedSignature(tx, given, accountKey, fields.signature);
      }
    } else if (fields.posterPrivateKey !== undefined) {
      // a key the route already proved (complete-with-key) is not proved again
      const key = opts.provenKey ?? (await requireOwnPrivateKey(ledger.keys, partyOf(market, task.posterDid, 'posterDid'), fields.posterPrivateKey, 'posterPrivateKey', 'poster'));
      tx = buildPayment({ ...expected, nodeAccountId: nodes.build });
      await signTransaction(tx, key);
    } else {
      // no transfer and no key to sign one (the rule of domain/market.ts the workflow applies too)
      throw refusalError(completionRefusal(task, { posterSignature: false, transfer: false })!);
    }
    const checked = checkPayment(tx, expected, accountKey, { nodeAccountIds: nodes.accepted, now });
    return Buffer.from(checked.transaction.toBytes()).toString('base64');
  } catch (err) {
    if (err instanceof TransferCheckError) throw paymentRefused(err);
    throw err;
  }
}

/** The prepare-payment answer: a fresh frozen, unsigned transfer (valid 120 s) and what it moves. */
export function paymentToSign(ledger: LedgerContext, task: TaskRecord) {
  const expected = expectedPayment(ledger, task);
  const node = nodesOf(ledger).build;
  const tx = buildPayment({ ...expected, nodeAccountId: node });
  const id = tx.transactionId!;
  const validUntil = new Date(id.validStart!.toDate().getTime() + (tx.transactionValidDuration ?? 120) * 1000);
  return {
    taskId: task.taskId,
    txBytes: Buffer.from(tx.toBytes()).toString('base64'),
    txId: id.toString(),
    validUntil: validUntil.toISOString(),
    nodeAccountId: node,
    payerAccountId: expected.payer,
    claimerAccountId: expected.claimer,
    treasuryAccountId: expected.treasury,
    priceHbar: tinybarsToHbar(expected.priceTinybars),
    priceTinybars: expected.priceTinybars.toString(),
    claimerTinybars: (expected.priceTinybars - expected.feeTinybars).toString(),
    feeTinybars: expected.feeTinybars.toString(),
    memo: expected.memo!,
  };
}

/** POST /market/tasks/{taskId}/prepare-payment: delivered, no escrow, the poster asking with an active passport. */
export async function preparePayment(market: Market, taskId: string, posterDid: string) {
  const task = await loadTask(market, taskId);
  checkPayable(task, posterDid);
  await requireActivePassport(market, partyOf(market, posterDid, 'posterDid'), 'poster');
  return paymentToSign(market.ledger, task);
}
