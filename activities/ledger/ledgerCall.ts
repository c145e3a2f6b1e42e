/**
 * How every ledger activity calls the ledger: final ledger errors become non-retryable
 * ApplicationFailures of type `LedgerError.<STATUS>` that workflows act on (refusals, sagas);
 * everything else is retried by Temporal with the workflow's bounded backoff.
 *
 * Every ledger write goes through the idempotent submitter and every other call is a read, so a
 * retry is safe whatever went wrong: the record under the write's key decides on the next attempt
 * (the receipt, the mirror, a re-send of the same bytes, or a replacement once the old bytes
 * provably never ran). A failure the adapter could not classify (LedgerError INTERNAL or
 * UNKNOWN_GRPC: a gRPC INTERNAL from an overloaded node, a database error around the submission
 * record) is therefore retried like a transport failure; only statuses the ledger itself answered
 * (precheck, consensus) are final. Under machine load such unclassified failures made task steps
 * answer 502 "Activity task failed" (bench/market.ts) and would have sent issuances to their saga.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';
import { TransferCheckError } from '../../ledger/transferCheck.js';
import { withSpan } from '../../telemetry/spans.js';

export const LEDGER_FAILURE_PREFIX = 'LedgerError.';

/** Statuses of failures the ledger adapter could not classify: no ledger answer, no known transport condition. */
const UNCLASSIFIED = new Set(['INTERNAL', 'UNKNOWN_GRPC']);

/** The failure type of client bytes a checker refused (issue 19): final, and the workflow answers it as a 400 (403 for another payer). */
export const CLIENT_TX_REFUSED = 'ClientTransactionRefused';

/** Runs one ledger call of an activity (a span `ledger <what>` while tracing runs) and classifies its failure. */
export async function ledgerCall<T>(what: string, fn: () => Promise<T>): Promise<T> {
  try {
    return await withSpan(`ledger ${what}`, {}, fn);
  } catch (err) {
    if (err instanceof TransferCheckError) {
      throw ApplicationFailure.create({ message: `${what}: ${err.message}`, type: CLIENT_TX_REFUSED, nonRetryable: true, details: [{ reason: err.reason, status: err.status, hint: err.hint ?? null }] });
    }
    const le = err instanceof LedgerError ? err : toLedgerError(err);
    const message = `${what}: ${le.status}${le.hint ? ` (${le.hint})` : ''}`;
    if (!le.retryable && !UNCLASSIFIED.has(le.status)) {
      throw ApplicationFailure.create({ message, type: `${LEDGER_FAILURE_PREFIX}${le.status}`, nonRetryable: true, details: [{ status: le.status, transactionId: le.transactionId ?? null }] });
    }
    throw ApplicationFailure.create({ message, type: 'LedgerRetryable', nonRetryable: false, details: [{ status: le.status }] });
  }
}
