/**
 * Client-supplied transaction bytes that passed their checker (issue 19 item 1): the only way such
 * bytes reach the idempotent submitter (ledger/submit.ts `checked`). A CheckedTransaction is made
 * by a checker after it proved the bytes are exactly the expected transaction
 * (ledger/transferCheck.ts checkPayment, ledger/scheduleSignCheck.ts checkScheduleSign); it says
 * whether the service's operator pays for it (and so must sign it). The submitter adds the
 * operator's signature to nothing else it did not build itself.
 */
import type { Transaction } from '@hashgraph/sdk';

const ISSUED = new WeakSet<object>();

export class CheckedTransaction {
  private constructor(
    readonly transaction: Transaction,
    /** true: the transaction id's account is the operator, which must sign it (a ScheduleSign the service pays for) */
    readonly operatorPays: boolean,
    /** which checker passed it (for error messages and logs) */
    readonly checker: string,
  ) {
    ISSUED.add(this);
  }

  /** For checkers only: `transaction` is exactly what the checker expected. */
  static passed(transaction: Transaction, opts: { operatorPays: boolean; checker: string }): CheckedTransaction {
    return new CheckedTransaction(transaction, opts.operatorPays, opts.checker);
  }

  /** True for a value made by `passed` (not a look-alike object). */
  static isChecked(value: unknown): value is CheckedTransaction {
    return typeof value === 'object' && value !== null && ISSUED.has(value);
  }
}
