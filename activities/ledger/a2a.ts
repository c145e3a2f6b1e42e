/**
 * Ledger activity of the a2aMessage workflow: submits the chunks of one A2A message, each a
 * transaction signed in the API (by the sender's key, or the operator's for the deprecated route),
 * in order, through the idempotent submitter, so a retried activity never submits a chunk twice.
 * The submitter here has no operator: the service adds no signature to a sender's transaction.
 */
import { Context } from '@temporalio/activity';
import { Transaction, type Client } from '@hashgraph/sdk';
import type { Sql } from 'postgres';
import { createLedgerClient } from '../../ledger/client.js';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';
import { IdempotentSubmitter } from '../../ledger/submit.js';
import type { LedgerActivityDeps } from '../index.js';
import { ledgerCall } from './ledgerCall.js';

export interface SubmitA2aChunksInput {
  /** base of the chunks' idempotency keys (the workflow id) */
  idempotencyKey: string;
  /** one single-chunk signed transaction per chunk, base64, in chunk order */
  chunks: string[];
}

export interface SubmitA2aChunksResult {
  transactionIds: string[];
  /** topic sequence number of each chunk */
  sequenceNumbers: number[];
}

function heartbeat(details: unknown): void {
  try {
    Context.current().heartbeat(details);
  } catch {
    // called outside an activity (tests): nothing to report to
  }
}

export function createA2aLedgerActivities(deps: { sql: Sql; ledger: LedgerActivityDeps }) {
  const { deployment, mirror } = deps.ledger;
  let submitter: IdempotentSubmitter | undefined;
  let client: Client | undefined;
  const senderSubmitter = () => {
    client ??= createLedgerClient({ network: deployment.network, node: deployment.node });
    submitter ??= new IdempotentSubmitter({ sql: deps.sql, client, mirror });
    return submitter;
  };

  async function submitA2aChunks(input: SubmitA2aChunksInput): Promise<SubmitA2aChunksResult> {
    const out: SubmitA2aChunksResult = { transactionIds: [], sequenceNumbers: [] };
    for (const [i, b64] of input.chunks.entries()) {
      heartbeat(i);
      const tx = Transaction.fromBytes(Uint8Array.from(Buffer.from(b64, 'base64')));
      const start = tx.transactionId?.validStart?.toDate().getTime() ?? 0;
      const validUntil = start + (tx.transactionValidDuration ?? 120) * 1000;
      const r = await ledgerCall(`a2a chunk ${i + 1}/${input.chunks.length}`, async () => {
        try {
          return await senderSubmitter().submit({ idempotencyKey: `${input.idempotencyKey}/chunk/${i + 1}`, kind: 'a2a_message', build: () => tx });
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
