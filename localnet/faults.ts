// Fault injection for tests: BUSY prechecks, node outages (gRPC UNAVAILABLE), slow consensus, a
// mirror that lags behind consensus.
export interface FaultState {
  busyRemaining: number;
  unavailableUntilMs: number;
  delayUntilMs: number;
  mirrorFrozenUntilMs: number;
}

export class Faults {
  busyRemaining = 0;
  unavailableUntilMs = 0;
  delayUntilMs = 0;
  mirrorFrozenUntilMs = 0;
  /** consensus time the mirror shows nothing after while frozen */
  mirrorFrozenAtNs = 0n;
  /** Called when a consensus delay is set, so the engine can schedule its flush. */
  onDelay: (() => void) | null = null;

  /** The next `n` transactions answer BUSY at precheck. */
  busy(n: number): void {
    this.busyRemaining = Math.max(0, Math.floor(n));
  }

  /** Every gRPC call fails with UNAVAILABLE for `seconds`. */
  unavailable(seconds: number): void {
    this.unavailableUntilMs = Date.now() + seconds * 1000;
  }

  /** Transactions accepted in the next `seconds` reach consensus only when that time has passed. */
  delayConsensus(seconds: number): void {
    this.delayUntilMs = Date.now() + seconds * 1000;
    this.onDelay?.();
  }

  /**
   * For `seconds` the mirror REST shows nothing that reached consensus after `atNs` (an ingestion
   * stall, as a real mirror lags behind the network): schedules keep their executed and deleted
   * timestamps unset, transactions looked up by id are not found.
   */
  freezeMirror(seconds: number, atNs: bigint): void {
    this.mirrorFrozenUntilMs = Date.now() + seconds * 1000;
    this.mirrorFrozenAtNs = atNs;
  }

  /** The consensus time the mirror is frozen at, or null when it is up to date. */
  mirrorCutoffNs(): bigint | null {
    return Date.now() < this.mirrorFrozenUntilMs ? this.mirrorFrozenAtNs : null;
  }

  reset(): void {
    this.busyRemaining = 0;
    this.unavailableUntilMs = 0;
    this.delayUntilMs = 0;
    this.mirrorFrozenUntilMs = 0;
    this.onDelay?.();
  }

  takeBusy(): boolean {
    if (this.busyRemaining <= 0) return false;
    this.busyRemaining--;
    return true;
  }

  isUnavailable(): boolean {
    return Date.now() < this.unavailableUntilMs;
  }

  isDelaying(): boolean {
    return Date.now() < this.delayUntilMs;
  }

  snapshot(): FaultState {
    return { busyRemaining: this.busyRemaining, unavailableUntilMs: this.unavailableUntilMs, delayUntilMs: this.delayUntilMs, mirrorFrozenUntilMs: this.mirrorFrozenUntilMs };
  }
}
