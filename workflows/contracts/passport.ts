/**
 * What the passport workflows (issuance, upgrade, revocation, refund, the payment reconciler) share
 * with each other and with the API that starts them: timings, the x402 payment reference, and the
 * messages they publish on the audit topic. Each workflow's id and input are in its own contract
 * (passportIssuance.ts, passportUpgrade.ts, passportRevoke.ts, passportRefund.ts, paymentReconciler.ts).
 */
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

/**
 * The x402 payment of a request: recorded by the API (verified, with its claim) before the workflow
 * starts; the workflow's first step settles it (issue 23). Ids only, never a key.
 */
export interface PaymentRef {
  transactionId: string;
  payer: string;
  amountTinybars: string;
  /**
   * The PAYMENT-SIGNATURE the request carried (base64 JSON holding the payer-signed transfer), which
   * the settle step checks and settles. Absent in histories recorded before settlement moved into the
   * workflow (the API had settled) and in runs started by the reconciler.
   */
  paymentSignature?: string;
}

/** The step a request failed at, kept as data on its claim row (db/migrations/0015). */
export type FailedStep = 'settle' | 'confirmSettlement' | 'mint' | 'deliver' | 'metadata update';

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

/** What the payment reconciler did with a payment that had no outcome after the bound (issue 23), on the audit topic. */
export interface PaymentReconciledEvent {
  v: 1;
  type: 'payment.reconciled';
  paymentTransactionId: string;
  /** the request was finished (passport issued or upgraded) or the payment paid back */
  outcome: 'issued' | 'upgraded' | 'refunded';
  reason: string;
  timestamp: number;
  did?: string;
  tokenId?: string;
  serial?: number;
  refundTransactionId?: string;
}

/** Every message the workflows publish on the audit topic. */
export type AuditMessage = PassportAuditEvent | PaymentReconciledEvent;
