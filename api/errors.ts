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

/** Longest client-supplied value echoed in an error message (longer ones are cut, with an ellipsis). */
export const ECHO_MAX_CHARS = 64;
/** Safety net: no error message or hint is longer than this. */
const TEXT_MAX_CHARS = 512;

function cut(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/**
 * A value the client sent, quoted and cut short, for use inside an error message or hint:
 * echo('0.0.x') is '"0.0.x"'. Every place that repeats client input in an error uses it.
 */
export function echo(value: unknown, max = ECHO_MAX_CHARS): string {
  const text = typeof value === 'string' ? value : String(value);
  return JSON.stringify(cut(text, max));
}

export function errorBody(code: ErrorCode, message: string, hint?: string, extra?: Record<string, unknown>): ErrorBody {
  const body: ErrorBody = { ...extra, error: cut(message, TEXT_MAX_CHARS), code, retryable: isRetryable(errorEntry(code)) };
  if (hint) body.hint = cut(hint, TEXT_MAX_CHARS);
  return body;
}
