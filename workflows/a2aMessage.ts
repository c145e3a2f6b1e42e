/**
 * a2aMessage (id a2a:{transactionId of the first chunk}), started by the A2A send routes with the
 * signed chunk transactions only (never a key):
 *
 *   submitA2aChunks (each chunk in order, idempotently) -> projectA2aMessage (read back from the
 *   mirror, joined by chunk_info, into a2a_messages)
 *
 * A chunk the ledger refuses for good (expired, insufficient balance, bad signature) ends the
 * workflow with status 'refused' and the ledger status; the API turns that into an error answer.
 */
import { ActivityFailure, ApplicationFailure, proxyActivities, workflowInfo } from '@temporalio/workflow';
import type { A2aLedgerActivities } from '../activities/ledger/a2a.js';
import type { A2aDbActivities } from '../activities/db/a2a.js';
import type { A2aMessageInput, A2aMessageResult } from './contracts/a2aMessage.js';
import { HEARTBEAT_TIMEOUT_MS, LEDGER_ACTIVITY_TIMEOUT_MS, LEDGER_MAX_ATTEMPTS, RETRY_MAXIMUM_MS } from './activityOptions.js';
import { requireBoundStart } from './binding.js';

const LEDGER_FAILURE_PREFIX = 'LedgerError.';

export async function a2aMessage(input: A2aMessageInput): Promise<A2aMessageResult> {
  requireBoundStart(input, 'a2aMessage'); // an input written for another workflow starts nothing (issue 26)
  const t = input.timings ?? {};
  const retry = { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2 };
  // the chunk submission heartbeats per chunk, and the keep-alive in between (worker/keepAlive.ts)
  const ledger = proxyActivities<A2aLedgerActivities>({
    startToCloseTimeout: t.activityTimeoutMs ?? 120_000, // up to 20 chunks, each a ledger write
    heartbeatTimeout: HEARTBEAT_TIMEOUT_MS,
    retry: { ...retry, maximumAttempts: t.ledgerMaxAttempts ?? LEDGER_MAX_ATTEMPTS },
  });
  const db = proxyActivities<A2aDbActivities>({ startToCloseTimeout: t.activityTimeoutMs ?? LEDGER_ACTIVITY_TIMEOUT_MS, heartbeatTimeout: HEARTBEAT_TIMEOUT_MS, retry });

  let submitted;
  try {
    submitted = await ledger.submitA2aChunks({ idempotencyKey: workflowInfo().workflowId, chunks: input.chunks });
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type?.startsWith(LEDGER_FAILURE_PREFIX)) {
      return { status: 'refused', ledgerStatus: cause.type.slice(LEDGER_FAILURE_PREFIX.length), reason: cause.message };
    }
    throw err;
  }
  const seqs = submitted.sequenceNumbers;
  const projected = await db.projectA2aMessage({
    messageId: input.messageId,
    transactionId: input.transactionId,
    firstSequence: seqs[0],
    lastSequence: seqs[seqs.length - 1],
    chunks: input.chunks.length,
  });
  return { status: 'delivered', ...projected };
}
