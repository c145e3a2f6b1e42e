// The contract between the consensus pipeline and the per-transaction-type handlers.
import { Status } from '../proto.js';
import type { Key, SignerSet, SigMapSigners } from '../signatures.js';
import type { Ns, TxId } from '../ids.js';
import type { LedgerState, Schedule, TxRecord } from '../state.js';

/** A handler failure: becomes the receipt status. Handlers throw it before they mutate state. */
export class HandleError extends Error {
  constructor(
    readonly status: number,
    readonly receipt: Partial<TxRecord> = {},
  ) {
    super(`status ${status}`);
  }
}

export const fail = (status: number, receipt?: Partial<TxRecord>): never => {
  throw new HandleError(status, receipt);
};

export interface ApplyCtx {
  state: LedgerState;
  consensusNs: Ns;
  payer: number;
  txId: TxId;
  /** Signers of this transaction (sigMap of a top-level transaction, or a schedule's signatories). */
  signers: SignerSet;
  /** The sigMap verifier of a top-level transaction (schedules collect signatures from it). */
  sigMap: SigMapSigners | null;
  rec: TxRecord;
  /** Required keys of a schedulable body, as if executed now with this payer (schedule handlers). */
  requiredKeysOf(body: Record<string, unknown>, payer: number): Key[];
  isSchedulable(body: Record<string, unknown>): boolean;
  /** Execute the schedule's transaction now if every required key has signed. */
  trySchedule(s: Schedule): void;
}

export interface Handler {
  /** Mirror node transaction type name. */
  name: string;
  /** Keys that must sign besides the payer; throws HandleError for unresolvable entities. */
  requiredKeys(state: LedgerState, body: any, payer: number): Key[];
  /** Validate then mutate; throw HandleError before the first mutation. */
  apply(ctx: ApplyCtx, body: any): void;
  /** Checks done at precheck (structure only, no state). Returns a status or OK. */
  precheck?(body: any): number;
}

export const OK = Status.OK;
