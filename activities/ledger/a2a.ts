/**
 * Ledger activity of the a2aMessage workflow: submits the chunks of one A2A message in order, through
 * the idempotent submitter, so a retried activity never submits a chunk twice. Two kinds of message:
 *
 *   sender-paid   each chunk signed in the API by the sender's key (send-with-key) or by the client
 *                 (send-signed); submitted by a submitter without an operator: the service adds no
 *                 signature to a sender's transaction.
 *   operator-paid the deprecated /a2a/send (issue 26 item 9): the API holds no operator key and hands
 *                 over the chunks unsigned; they are signed here, by the operator's submitter, only
 *                 after this run used the API's one-time authorisation of exactly these chunks (the
 *                 start's nonce, this workflow id from the activity's own context, the envelope's
 *                 sender, the chunks' digest; db/queries/stepAuthorisations.ts, written once the
 *                 sender's DID signature, passports and daily budget passed), and the chunks are as the
 *                 API builds them (ledger/topicSubmission.ts operatorPaidChunks). A copied or made-up
 *                 input, even encrypted with the codec key, gets nothing signed. Chunks already signed
 *                 by the operator (an API from before) are submitted as they are.
 *
 * It never trusts its input (DESIGN 11, issue 23): before submitting, the chunks are decoded and
 * checked again as one message (one message to the a2a topic, consistent chunk info, an A2A envelope
 * paid by its sender or by the operator, every chunk validly signed by the payer's key from the
 * mirror, or authorised as above), and a message with less than A2A_MIN_REMAINING_MS left of its
 * validity window is refused before its first chunk, so nobody pays for a message that has no time
 * left to go out.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { Transaction, type Client } from '@hashgraph/sdk';
import type { Sql } from 'postgres';
import { createLedgerClient } from '../../ledger/client.js';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';
import { IdempotentSubmitter } from '../../ledger/submit.js';
import { publicKeyFromMirror } from '@agent-passport/core/keys';
import { allChunksSignedBy, decodeSubmissionChunks, operatorPaidChunks, TopicSubmissionError, type DecodedSubmission } from '../../ledger/topicSubmission.js';
import { clientNodeAccountIds } from '../../ledger/client.js';
import type { CheckedTransaction } from '../../ledger/checkedTransaction.js';
import { findSubmission } from '../../db/queries/ledgerSubmissions.js';
import { useStepAuthorisation } from '../../db/queries/stepAuthorisations.js';
import { a2aChunksSha256 } from '../../domain/stepAuthorisation.js';
import { a2aMessageContract } from '../../workflows/contracts/a2aMessage.js';
import { decodeEnvelope, isTrustedPayer } from '@agent-passport/core/a2a';
import { parseHederaDid } from '@agent-passport/core/did';
import type { LedgerServices } from '../../ledger/services.js';
import { ledgerCall } from './ledgerCall.js';

export interface SubmitA2aChunksInput {
  /** base of the chunks' idempotency keys (the workflow id) */
  idempotencyKey: string;
  /** one single-chunk signed transaction per chunk, base64, in chunk order (unsigned when the operator pays) */
  chunks: string[];
  /** the workflow start's nonce: names the API's authorisation of an operator-paid message */
  authorisation?: string;
}

export interface SubmitA2aChunksResult {
  transactionIds: string[];
  /** topic sequence number of each chunk */
  sequenceNumbers: number[];
}

/** A message is not started with less than this left of its validity window (the API accepts it with 15 s left). */
const A2A_MIN_REMAINING_MS = 5_000;

/** The workflow run of the activity (none outside an activity). */
function activityExecution(): { workflowId: string; runId: string } | null {
  try {
    return Context.current().info.workflowExecution ?? null;
  } catch {
    return null;
  }
}

function heartbeat(details: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    // called outside an activity (tests): nothing to report to
  }
}

export function createA2aLedgerActivities(deps: { sql: Sql; ledger: LedgerServices }) {
  const { deployment, mirror } = deps.ledger;
  let submitter: IdempotentSubmitter | undefined;
  let client: Client | undefined;
  const senderSubmitter = () => {
    client ??= createLedgerClient({ network: deployment.network, node: deployment.node });
    submitter ??= new IdempotentSubmitter({ sql: deps.sql, client, mirror });
    return submitter;
  };

  const refuse = (status: string, message: string) => ApplicationFailure.create({ type: `LedgerError.${status}`, message, nonRetryable: true });

  /**
   * The chunks as one message, checked again (see the module comment); a refusal is final and nothing
   * is submitted. `operatorSigns`: the operator's checked chunks, which its submitter signs.
   */
  async function checkedMessage(input: SubmitA2aChunksInput): Promise<{ sub: DecodedSubmission; operatorSigns?: CheckedTransaction[] }> {
    let sub: DecodedSubmission;
    try {
      sub = decodeSubmissionChunks(input.chunks.map((b64) => Uint8Array.from(Buffer.from(b64, 'base64'))));
    } catch (err) {
      if (err instanceof TopicSubmissionError) throw ApplicationFailure.create({ type: 'A2aSubmissionInvalid', message: err.message, nonRetryable: true });
      throw err;
    }
    const invalid = (message: string) => ApplicationFailure.create({ type: 'A2aSubmissionInvalid', message, nonRetryable: true });
    if (sub.chunks.length !== input.chunks.length) throw invalid(`${input.chunks.length} chunk(s) given, ${sub.chunks.length} distinct`);
    if (sub.topicId !== deployment.topics.a2a) throw invalid(`the message goes to topic ${sub.topicId}, not the a2a topic`);
    const envelope = decodeEnvelope(sub.message);
    const sender = envelope ? parseHederaDid(envelope.from) : null;
    if (!sender || !isTrustedPayer(sub.payerAccountId, sender.accountId, deployment.operator.accountId)) {
      throw invalid(`the message is not an A2A envelope paid by its sender (payer ${sub.payerAccountId})`);
    }
    const account = await ledgerCall('read the payer key', () => mirror.getAccount(sub.payerAccountId));
    const key = account && !account.deleted ? publicKeyFromMirror(account.key) : null;
    if (key && allChunksSignedBy(sub, key)) return { sub };
    if (sub.payerAccountId === deployment.operator.accountId && sub.chunks.every((c) => c.entries.every((e) => e.sigPairs.length === 0))) {
      return { sub, operatorSigns: await authorisedOperatorChunks(sub, envelope!.from, input) };
    }
    throw refuse('INVALID_SIGNATURE', `not every chunk is validly signed by the key of ${sub.payerAccountId}`);
  }

  /** Unsigned operator-paid chunks: signed only once this run used the API's authorisation of exactly these chunks. */
  async function authorisedOperatorChunks(sub: DecodedSubmission, senderDid: string, input: SubmitA2aChunksInput): Promise<CheckedTransaction[]> {
    let checked: CheckedTransaction[];
    try {
      checked = operatorPaidChunks(sub, { operatorAccountId: deployment.operator.accountId, topicId: deployment.topics.a2a, nodeAccountIds: clientNodeAccountIds(deps.ledger.client).map((n) => n.toString()) });
    } catch (err) {
      if (err instanceof TopicSubmissionError) throw ApplicationFailure.create({ type: 'A2aSubmissionInvalid', message: err.message, nonRetryable: true });
      throw err;
    }
    // the workflow and run from the activity's own context, never from its input
    const exec = activityExecution();
    const use = exec && input.authorisation
      ? await useStepAuthorisation(deps.sql, {
          nonce: input.authorisation,
          workflowId: exec.workflowId,
          message: a2aMessageContract.type,
          callerDid: senderDid,
          argsSha256: a2aChunksSha256(input.chunks),
          usedBy: `${exec.runId}/submit`,
        })
      : 'absent';
    if (use !== 'used') throw refuse('INVALID_SIGNATURE', `the operator signs message ${sub.transactionId} only as the API authorised it (POST /a2a/send) for this workflow (${use})`);
    return checked;
  }

  async function submitA2aChunks(input: SubmitA2aChunksInput): Promise<SubmitA2aChunksResult> {
    const { sub, operatorSigns } = await checkedMessage(input);
    if (!(await findSubmission(deps.sql, `${input.idempotencyKey}/chunk/1`))) {
      // nothing submitted yet: a message whose window is (nearly) over is not started, so its sender pays for no part of it
      const validUntil = sub.validStart.getTime() + sub.validDurationSeconds * 1000;
      if (Date.now() > validUntil - A2A_MIN_REMAINING_MS) {
        throw refuse('TRANSACTION_EXPIRED', `the message's transactions expire at ${new Date(validUntil).toISOString()}, too soon to submit its ${sub.chunks.length} chunk(s)`);
      }
    }
    const out: SubmitA2aChunksResult = { transactionIds: [], sequenceNumbers: [] };
    for (const [i, b64] of input.chunks.entries()) {
      heartbeat(i);
      const tx = Transaction.fromBytes(Uint8Array.from(Buffer.from(b64, 'base64')));
      const start = tx.transactionId?.validStart?.toDate().getTime() ?? 0;
      const validUntil = start + (tx.transactionValidDuration ?? 120) * 1000;
      const r = await ledgerCall(`a2a chunk ${i + 1}/${input.chunks.length}`, async () => {
        try {
          const idempotencyKey = `${input.idempotencyKey}/chunk/${i + 1}`;
          // the operator's submitter adds the operator's signature to a checked chunk it pays for
          if (operatorSigns) return await deps.ledger.submitter.submit({ idempotencyKey, kind: 'a2a_message', checked: () => operatorSigns[i]! });
          return await senderSubmitter().submit({ idempotencyKey, kind: 'a2a_message', build: () => tx });
        } catch (err) {
          const le = toLedgerError(err);
          // a pre-signed transaction cannot be rebuilt: once its window is over, it never will be sent
          if (le.retryable && Date.now() > validUntil + 10_000) {
            throw new LedgerError('TRANSACTION_EXPIRED', `a2a chunk ${i + 1} expired before it reached consensus`, { retryable: false, transactionId: le.transactionId });
          }
          throw err;
        }
      });
      out.transactionIds.push(r.transactionId);
      out.sequenceNumbers.push(Number(r.receipt.topicSequenceNumber ?? 0));
    }
    return out;
  }

  return { submitA2aChunks };
}

export type A2aLedgerActivities = ReturnType<typeof createA2aLedgerActivities>;
