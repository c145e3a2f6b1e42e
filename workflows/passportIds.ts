/**
 * Workflow ids and types of the passport workflows. Pure (no imports), shared by the workflows and
 * by the API that starts them, so the Temporal UI reads as business ids:
 *   passport:{network}:{accountId}                 issuance (one at a time per wallet)
 *   passport-upgrade:{tokenId}:{serial}:{tier}     upgrade to a tier
 *   passport-revoke:{tokenId}:{serial}             revocation
 *   passport-refund:{paymentTransactionId}         refund of a payment that lost a race
 */
export function passportIssuanceWorkflowId(network: string, accountId: string): string {
  return `passport:${network}:${accountId}`;
}

export function passportUpgradeWorkflowId(tokenId: string, serial: number, tier: string): string {
  return `passport-upgrade:${tokenId}:${serial}:${tier}`;
}

export function passportRevokeWorkflowId(tokenId: string, serial: number): string {
  return `passport-revoke:${tokenId}:${serial}`;
}

export function passportRefundWorkflowId(paymentTransactionId: string): string {
  return `passport-refund:${paymentTransactionId}`;
}

/** Retry and timeout knobs; defaults suit production, tests pass small values. */
export interface PassportWorkflowTimings {
  /** first retry interval of activities (default 1 s) */
  retryInitialMs?: number;
  /** backoff cap (default 30 s) */
  retryMaximumMs?: number;
  /** attempts of a ledger write before it counts as failed for good (default 20) */
  ledgerMaxAttempts?: number;
  /** start-to-close timeout of one activity attempt (default 2 minutes) */
  activityTimeoutMs?: number;
}

/** The x402 payment the API settled before starting the workflow (ids only, never secrets). */
export interface SettledPaymentRef {
  transactionId: string;
  payer: string;
  amountTinybars: string;
}

/** Versioned audit message on the audit topic (DESIGN.md section 6). */
export interface PassportAuditEvent {
  v: 1;
  type: 'passport.issued' | 'passport.upgraded' | 'passport.revoked';
  did: string;
  tokenId: string;
  serial: number;
  timestamp: number;
  tier?: string;
  oldTier?: string;
  newTier?: string;
  reason?: string;
}
