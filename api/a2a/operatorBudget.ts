/**
 * The operator-paid A2A byte budget (issue 20 item 7): the deprecated POST /a2a/send makes the
 * operator pay every chunk transaction (about 257 for a 256 KB message), so each sender DID may have
 * the operator pay for at most A2A_OPERATOR_DAILY_BYTES envelope bytes per UTC day, counted in
 * PostgreSQL across every API instance by the one quota mechanism (db/queries/quotas.ts, quota
 * 'a2a.operator.bytes': a message takes as many places as it has bytes). Over it: 429
 * a2a_operator_budget_exceeded with X-RateLimit-* (the budget, the bytes left, the next UTC
 * midnight) and Retry-After, and a hint to /a2a/send-signed or /a2a/send-with-key, where the sender
 * pays and only the size limit applies. Bytes are taken before the message is signed and are not
 * given back if the send then fails (the operator may already have paid some chunks).
 */
import type { Sql } from 'postgres';
import { ApiError } from '../errors.js';
import { DAY_MS } from '../quotas.js';
import { retryAfterSeconds } from '../../domain/registry.js';
import { takeQuota } from '../../db/queries/quotas.js';

/** The quota scope of the operator-paid bytes (subject: the sender DID; one window per UTC day). */
export const OPERATOR_BYTES_SCOPE = 'a2a.operator.bytes';

export class OperatorByteBudget {
  constructor(
    private readonly sql: Sql,
    private readonly dailyBytes: number,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** Takes `bytes` of the sender's budget for today, or throws the 429. */
  async take(sender: string, bytes: number): Promise<void> {
    const at = this.now();
    const take = await takeQuota(this.sql, { scope: OPERATOR_BYTES_SCOPE, subject: sender, max: this.dailyBytes, windowMs: DAY_MS }, at, bytes);
    if (take.ok) return;
    const reset = take.resetAt; // the next UTC midnight: day windows start at UTC midnight
    const seconds = retryAfterSeconds(at, reset);
    const left = take.remaining;
    throw new ApiError('a2a_operator_budget_exceeded', `The operator pays for at most ${this.dailyBytes} bytes of messages per sender per UTC day on this route; ${sender} has ${left} left and this message is ${bytes} bytes`, {
      hint: `Send with POST /a2a/send-signed (or /a2a/send-with-key): the sender pays the topic fees and no daily budget applies; or retry after ${reset.toISOString()} (UTC midnight)`,
      headers: {
        'x-ratelimit-limit': String(this.dailyBytes),
        'x-ratelimit-remaining': String(left),
        'x-ratelimit-reset': String(Math.floor(reset.getTime() / 1000)),
        'retry-after': String(seconds),
      },
    });
  }
}
