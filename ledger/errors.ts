// Typed errors of the ledger adapter. Every failure that leaves ledger/ is a LedgerError carrying the
// Hedera status name (or a transport condition), whether a retry can help, and a hint for the caller.
// Activities turn `retryable === false` into non-retryable failures; nothing here holds a secret.
import {
  MaxAttemptsOrTimeoutError,
  PrecheckStatusError,
  ReceiptStatusError,
  Status,
} from '@hashgraph/sdk';
import { KeyError } from '@agent-passport/core/keys';

/** Statuses after which the same request may succeed later. */
export const RETRYABLE_STATUSES: ReadonlySet<string> = new Set([
  'BUSY',
  'PLATFORM_NOT_ACTIVE',
  'PLATFORM_TRANSACTION_NOT_CREATED',
  'UNKNOWN',
  'RECEIPT_NOT_FOUND',
  'RECORD_NOT_FOUND',
  'THROTTLED_AT_CONSENSUS',
  // transport conditions (not HAPI codes)
  'TIMEOUT',
  'UNAVAILABLE',
  'DEADLINE_EXCEEDED',
  'RESOURCE_EXHAUSTED',
  'MIRROR_UNAVAILABLE',
  'NETWORK_ERROR',
  // an earlier submission is still within its valid window and not yet visible anywhere
  'PENDING',
]);

/** Hints for final statuses a caller can act on. */
const HINTS: Record<string, string> = {
  INVALID_SIGNATURE: 'sign the transaction with every key it needs (payer and affected accounts)',
  INSUFFICIENT_ACCOUNT_BALANCE: 'fund the paying account and try again',
  INSUFFICIENT_PAYER_BALANCE: 'fund the fee payer account and try again',
  TOKEN_NOT_ASSOCIATED_TO_ACCOUNT:
    'associate the token with the receiving account or give it a free automatic-association slot',
  NO_REMAINING_AUTOMATIC_ASSOCIATIONS:
    'associate the token with the receiving account or raise its max automatic associations',
  ACCOUNT_FROZEN_FOR_TOKEN: 'unfreeze the account for this token',
  TRANSACTION_EXPIRED: 'build a new transaction with a fresh transaction id',
  DUPLICATE_TRANSACTION: 'the transaction id was already used; look up its receipt instead',
  INVALID_ACCOUNT_ID: 'check the account id',
  INVALID_TOKEN_ID: 'check the token id',
  INVALID_TOPIC_ID: 'check the topic id',
  INVALID_SCHEDULE_ID: 'check the schedule id',
  SCHEDULE_ALREADY_DELETED: 'the schedule was deleted; create a new one',
  SCHEDULE_ALREADY_EXECUTED: 'the schedule already executed',
  IDENTICAL_SCHEDULE_ALREADY_CREATED: 'an identical schedule exists; sign it instead of creating it again',
  METADATA_TOO_LONG: 'NFT metadata is limited to 100 bytes',
  INSUFFICIENT_TX_FEE: 'raise the max transaction fee',
};

export type LedgerErrorPhase = 'precheck' | 'receipt' | 'query' | 'mirror' | 'transport' | 'submit' | 'input';

export class LedgerError extends Error {
  override readonly name = 'LedgerError';
  readonly status: string;
  readonly retryable: boolean;
  readonly phase: LedgerErrorPhase;
  readonly transactionId?: string;
  readonly hint?: string;

  constructor(
    status: string,
    message: string,
    options: { retryable?: boolean; phase?: LedgerErrorPhase; transactionId?: string; hint?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.status = status;
    this.retryable = options.retryable ?? RETRYABLE_STATUSES.has(status);
    this.phase = options.phase ?? 'submit';
    this.transactionId = options.transactionId;
    this.hint = options.hint ?? HINTS[status];
  }

  toJSON(): Record<string, unknown> {
    return {
      name: this.name,
      status: this.status,
      retryable: this.retryable,
      phase: this.phase,
      transactionId: this.transactionId,
      hint: this.hint,
      message: this.message,
    };
  }
}

export function isRetryableStatus(status: string): boolean {
  return RETRYABLE_STATUSES.has(status);
}

export function statusName(status: Status | string | number | null | undefined): string {
  if (status == null) return 'UNKNOWN';
  if (typeof status === 'string') return status;
  if (typeof status === 'number') return Status._fromCode(status).toString();
  return status.toString();
}

const GRPC_CODES: Record<number, string> = {
  1: 'CANCELLED',
  2: 'UNKNOWN_GRPC',
  4: 'DEADLINE_EXCEEDED',
  8: 'RESOURCE_EXHAUSTED',
  12: 'UNIMPLEMENTED',
  13: 'INTERNAL',
  14: 'UNAVAILABLE',
};

/**
 * Maps anything the SDK (or fetch) throws to a LedgerError. Already-typed errors pass through.
 */
export function toLedgerError(err: unknown, context?: { transactionId?: string; phase?: LedgerErrorPhase }): LedgerError {
  if (err instanceof LedgerError) return err;
  if (err instanceof KeyError) return new LedgerError(err.status, err.message, { phase: err.phase, retryable: err.retryable, hint: err.hint, cause: err });
  if (err instanceof PrecheckStatusError) {
    const status = statusName(err.status);
    return new LedgerError(status, `precheck failed: ${status}`, {
      phase: 'precheck',
      transactionId: err.transactionId?.toString() ?? context?.transactionId,
      cause: err,
    });
  }
  if (err instanceof ReceiptStatusError) {
    const status = statusName(err.status);
    return new LedgerError(status, `transaction reached consensus with status ${status}`, {
      phase: 'receipt',
      // a receipt status is final for this transaction id, even BUSY-like codes at consensus
      retryable: status === 'THROTTLED_AT_CONSENSUS' || status === 'BUSY',
      transactionId: err.transactionId?.toString() ?? context?.transactionId,
      cause: err,
    });
  }
  if (err instanceof MaxAttemptsOrTimeoutError) {
    const last = /last error being: ([A-Z_]+)/.exec(err.message)?.[1];
    const status = last && RETRYABLE_STATUSES.has(last) ? last : 'TIMEOUT';
    return new LedgerError(status, `ledger did not answer in time (${err.message})`, {
      phase: context?.phase ?? 'transport',
      retryable: true,
      transactionId: context?.transactionId,
      cause: err,
    });
  }
  const e = err as { name?: string; message?: string; code?: number; status?: { valueOf(): number } } | undefined;
  if (e && e.name === 'GrpcServiceError') {
    const code = typeof e.status?.valueOf === 'function' ? Number(e.status.valueOf()) : undefined;
    const status = (code !== undefined && GRPC_CODES[code]) || 'UNAVAILABLE';
    const retryable = status === 'UNAVAILABLE' || status === 'DEADLINE_EXCEEDED' || status === 'RESOURCE_EXHAUSTED' || status === 'CANCELLED';
    return new LedgerError(status, `gRPC error: ${e.message ?? status}`, {
      phase: 'transport',
      retryable,
      transactionId: context?.transactionId,
      cause: err,
    });
  }
  const message = e?.message ?? String(err);
  if (/timeout|timed out|ETIMEDOUT|deadline/i.test(message)) {
    return new LedgerError('TIMEOUT', message, { phase: context?.phase ?? 'transport', retryable: true, transactionId: context?.transactionId, cause: err });
  }
  if (/ECONNREFUSED|ECONNRESET|EPIPE|fetch failed|socket hang up|unhealthy|UNAVAILABLE/i.test(message)) {
    return new LedgerError('UNAVAILABLE', message, { phase: context?.phase ?? 'transport', retryable: true, transactionId: context?.transactionId, cause: err });
  }
  return new LedgerError('INTERNAL', message, { phase: context?.phase ?? 'submit', retryable: false, transactionId: context?.transactionId, cause: err });
}
