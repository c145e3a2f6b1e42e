/**
 * Payment of a task WITHOUT escrow (SPEC 4.4a prepare-payment and complete; DESIGN.md 8): the
 * poster pays the claimer directly with one CryptoTransfer, paid and signed by the poster's own
 * account: poster -price, claimer +(price - fee), treasury +fee (fee = the task's feeBps of the
 * price, rounded down), memo "task {taskId} payment". Nothing of it passes through the escrow account.
 *
 *   POST /market/tasks/{taskId}/prepare-payment   (DID-signed, posterDid) the frozen, unsigned
 *        transfer (base64), its transaction id, the resolved account ids and amounts. 400 when the
 *        task is not delivered, has no claimer, or is paid from escrow.
 *   directPaymentBytes(...)  used by the complete routes for a task without escrow: either
 *        txBytes (signed, or unsigned + signature + publicKey, e.g. from /market/sign) checked for
 *        exactly the expected transfer, or posterPrivateKey, which signs the same transfer here in
 *        memory. Answers the base64 signed bytes, the only thing the workflow's complete Update sees.
 */
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { PublicKey } from '@hashgraph/sdk';
import type { AppContext, LedgerContext } from '../../context.js';
import { ApiError } from '../../errors.js';
import { errorResponses } from '../../schemas/common.js';
import { preparePaymentBodySchema, preparePaymentResultSchema } from '../../schemas/marketPayments.js';
import { taskIdParams } from '../../schemas/market.js';
import { payoutOf, tinybarsToHbar, type TaskRecord } from '../../../domain/market.js';
import { parseHederaDid } from '../../../domain/did.js';
import { clientNodeAccountIds } from '../../../ledger/client.js';
import { parsePublicKey, signTransaction } from '../../../ledger/keys.js';
import { loadTask, marketState, partyOf, refuseEarly, requireActivePassport } from './shared.js';
import { accountPublicKey, requireOwnPrivateKey } from '../../auth/ownKey.js';
import {
  addDetachedSignature,
  buildPayment,
  checkPayment,
  decodeTransactionBase64,
  TransferCheckError,
  type ExpectedPayment,
} from '../../../ledger/transferCheck.js';

/** Non-escrow payment fields of a complete request. */
export interface DirectPaymentFields {
  txBytes?: string;
  signature?: string;
  publicKey?: string;
  posterPrivateKey?: string;
}

export const PAYMENT_RECIPE =
  'POST /market/tasks/{taskId}/prepare-payment (DID-signed as the poster) returns txBytes; sign its body with the poster key ' +
  '(offline, or POST /market/sign) and send complete { posterDid, txBytes, signature, publicKey } within about 100 s, or send txBytes ' +
  'signed with the SDK (Transaction.fromBytes(txBytes).sign(key).toBytes()), or posterPrivateKey.';

export function paymentMemo(taskId: string): string {
  return `task ${taskId} payment`;
}

function accountOf(did: string | null, role: string): string {
  const parsed = did ? parseHederaDid(did) : null;
  if (!parsed) throw new ApiError('invalid_request', `The task has no ${role} account`, { hint: 'A task is paid after a claimer delivered' });
  return parsed.accountId;
}

/** The one payment completing `task` may make (amounts in tinybars). */
export function expectedPayment(ledger: LedgerContext, task: TaskRecord): ExpectedPayment {
  const { claimerTinybars, feeTinybars } = payoutOf(BigInt(task.priceTinybars), task.feeBps);
  return {
    payer: accountOf(task.posterDid, 'poster'),
    claimer: accountOf(task.claimerDid, 'claimer'),
    treasury: ledger.deployment.treasury,
    priceTinybars: claimerTinybars + feeTinybars,
    feeTinybars,
    memo: paymentMemo(task.taskId),
  };
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
  if (task.escrow) {
    throw new ApiError('invalid_request', `Task ${task.taskId} is paid from escrow (scheduleId ${task.scheduleId ?? 'pending'}): there is no transfer to sign`, {
      hint: 'Complete it with posterPrivateKey (POST /market/tasks/{taskId}/complete or complete-with-key)',
    });
  }
}

/**
 * The base64 signed payment for a complete request on a task without escrow, checked for exactly the
 * expected transfer signed by the poster. Throws ApiError 400 (or 403 for another payer or key).
 */
export async function directPaymentBytes(ctx: AppContext, task: TaskRecord, fields: DirectPaymentFields, now = Date.now()): Promise<string> {
  const ledger = ctx.ledger!;
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
      const key = await requireOwnPrivateKey(ledger.keys, partyOf(ctx, task.posterDid, 'posterDid'), fields.posterPrivateKey, 'posterPrivateKey', 'poster');
      tx = buildPayment({ ...expected, nodeAccountId: nodes.build });
      await signTransaction(tx, key);
    } else {
      throw new ApiError('invalid_request', 'Payment fields are missing: send txBytes (+ signature + publicKey) or posterPrivateKey', { hint: PAYMENT_RECIPE });
    }
    const checked = checkPayment(tx, expected, accountKey, { nodeAccountIds: nodes.accepted, now });
    return Buffer.from(checked.transaction.toBytes()).toString('base64');
  } catch (err) {
    if (err instanceof TransferCheckError) throw paymentRefused(err);
    throw err;
  }
}

/** The prepare-payment answer: a fresh frozen, unsigned transfer (valid 120 s) and what it moves. */
export function preparePayment(ledger: LedgerContext, task: TaskRecord) {
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

/**
 * Registers prepare-payment and installs the complete routes' hook for tasks without escrow
 * (marketState(ctx).directPayment, see ./shared.ts).
 */
const paymentRoutes: FastifyPluginAsyncZod<{ ctx: AppContext }> = async (app, { ctx }) => {
  const ledger = ctx.ledger!;
  const state = marketState(ctx);
  state.directPayment = ({ task, body }) => directPaymentBytes(ctx, task, body);

  app.post(
    '/market/tasks/:taskId/prepare-payment',
    {
      schema: {
        tags: ['market'],
        summary: 'The frozen payment transfer of a delivered task without escrow, to sign offline',
        description:
          'DID signature headers are required and the signed DID must be posterDid. Answers base64 txBytes of a frozen, unsigned ' +
          'CryptoTransfer paid by the poster: poster -price, claimer +(price - fee), treasury +fee, memo "task {taskId} payment", for one node, ' +
          'valid 120 s, with its txId and the resolved account ids and amounts. Nothing is signed or submitted. ' +
          PAYMENT_RECIPE +
          ' 400 when the task is not delivered, has no claimer or is paid from escrow.',
        params: taskIdParams,
        body: preparePaymentBodySchema,
        response: { 200: preparePaymentResultSchema, ...errorResponses(400, 401, 403, 404, 500, 503) },
      },
      preHandler: app.signedRequest((request) => (request.body as { posterDid?: string }).posterDid),
    },
    async (request) => {
      const { posterDid } = request.body;
      const task = await loadTask(state, request.params.taskId);
      checkPayable(task, posterDid);
      await requireActivePassport(ctx, partyOf(ctx, posterDid, 'posterDid'), 'poster');
      return preparePayment(ledger, task);
    },
  );
};

export default paymentRoutes;
