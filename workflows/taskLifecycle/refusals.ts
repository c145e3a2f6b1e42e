/**
 * How the taskLifecycle workflow refuses (workflows/contracts/taskLifecycle.ts TASK_REFUSAL_TYPE): an
 * ApplicationFailure whose first detail is the TaskRefusal (code, HTTP status, message, hint) the
 * API answers with; and how a ledger refusal met inside a step becomes one.
 */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';
import type { TaskRefusal } from '../../domain/market.js';
import { TASK_REFUSAL_TYPE } from '../contracts/taskLifecycle.js';

const LEDGER_FAILURE_PREFIX = 'LedgerError.';
const CLIENT_TX_REFUSED = 'ClientTransactionRefused';

export function refusalFailure(r: TaskRefusal): ApplicationFailure {
  return ApplicationFailure.create({ message: r.message, type: TASK_REFUSAL_TYPE, nonRetryable: true, details: [r] });
}

/** Throws the refusal, if there is one (the rules are domain/market.ts's). */
export function refuse(r: TaskRefusal | null): void {
  if (r) throw refusalFailure(r);
}

export function badRequest(message: string, hint?: string): ApplicationFailure {
  return refusalFailure({ kind: 'invalid', code: 'invalid_request', status: 400, message, hint });
}

/** Client bytes refused by the rules of domain/ledgerTransaction.ts: "{what}: {why}". */
export function bytesRefusal(what: string, message: string, hint?: string): ApplicationFailure {
  return refusalFailure({ kind: 'invalid', code: 'invalid_request', status: 400, message: `${what}: ${message}`, hint });
}

/** A final ledger refusal met in a step (activity failure of type LedgerError.*) as a 400 refusal. */
export function ledgerRefusal(err: unknown, what: string): never {
  const cause = err instanceof ActivityFailure ? err.cause : undefined;
  if (cause instanceof ApplicationFailure && cause.type === CLIENT_TX_REFUSED) {
    // the activity's own check of the client's bytes (issue 19): nothing was signed or submitted
    const d = (cause.details?.[0] ?? {}) as { status?: number; hint?: string | null };
    const status = d.status === 403 ? 403 : 400;
    throw refusalFailure({ kind: 'invalid', code: status === 403 ? 'auth_did_mismatch' : 'invalid_request', status, message: `${what}: ${cause.message}`, hint: d.hint ?? undefined });
  }
  if (cause instanceof ApplicationFailure && cause.type?.startsWith(LEDGER_FAILURE_PREFIX)) {
    const status = cause.type.slice(LEDGER_FAILURE_PREFIX.length);
    throw refusalFailure({ kind: 'invalid', code: 'invalid_request', status: 400, message: `${what}: the ledger answered ${status}`, hint: ledgerHint(status) });
  }
  throw err;
}

export function ledgerHint(status: string): string {
  if (status === 'INSUFFICIENT_ACCOUNT_BALANCE' || status === 'INSUFFICIENT_PAYER_BALANCE') return 'The poster account must hold the price in HBAR';
  if (status === 'NO_NEW_VALID_SIGNATURES' || status === 'INVALID_SIGNATURE') return "Sign with the poster account's own private key";
  if (status === 'TRANSACTION_EXPIRED') return 'Send the request again (signed transactions are valid 120 s)';
  return 'See the ledger status; nothing was paid';
}
