/**
 * ApiError is how route code reports a failure: a catalog code, a message safe to show, and an
 * optional hint. The error handler turns it into the SPEC error body. The status comes from the
 * catalog unless a route overrides it for the spec's status-only cases.
 */
import { errorEntry, isRetryable, type ErrorCode } from '../domain/errors.js';

export interface ApiErrorOptions {
  hint?: string;
  status?: number;
  /** Extra fields merged into the body (e.g. the 402 payment terms). Never secrets. */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export class ApiError extends Error {
  readonly code: ErrorCode;
  readonly status: number;
  readonly hint?: string;
  readonly extra?: Record<string, unknown>;
  readonly headers?: Record<string, string>;

  constructor(code: ErrorCode, message: string, opts: ApiErrorOptions = {}) {
    super(message);
    this.name = 'ApiError';
    this.code = code;
    this.status = opts.status ?? errorEntry(code).http_status;
    this.hint = opts.hint;
    this.extra = opts.extra;
    this.headers = opts.headers;
  }
}

export interface ErrorBody {
  error: string;
  code: string;
  retryable?: boolean;
  hint?: string;
  [extra: string]: unknown;
}

export function errorBody(code: ErrorCode, message: string, hint?: string, extra?: Record<string, unknown>): ErrorBody {
  const body: ErrorBody = { ...extra, error: message, code, retryable: isRetryable(errorEntry(code)) };
  if (hint) body.hint = hint;
  return body;
}
