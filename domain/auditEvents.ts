/**
 * Audit topic messages (SPEC 2 "Audit event"): versioned JSON ({ v: 1, type, did, tokenId, serial,
 * timestamp, tier | oldTier, newTier | reason }) as the passport workflows publish them, and the
 * event shape GET /audit serves (the message's fields plus its topic sequence number and consensus
 * timestamp).
 */
export interface AuditEvent {
  type: string;
  did?: string;
  tokenId?: string;
  serial?: number;
  timestamp?: number;
  tier?: string;
  oldTier?: string;
  newTier?: string;
  reason?: string;
  /** payment.reconciled (issue 23) */
  paymentTransactionId?: string;
  outcome?: string;
  refundTransactionId?: string;
  sequenceNumber?: number;
  consensusTimestamp?: string;
}

const STRING_FIELDS = ['did', 'tokenId', 'tier', 'oldTier', 'newTier', 'reason', 'paymentTransactionId', 'outcome', 'refundTransactionId'] as const;

/** Parses one topic message into an audit event; null for anything that is not one. */
export function parseAuditMessage(text: string, meta: { sequenceNumber: number; consensusTimestamp?: string | null }): AuditEvent | null {
  let m: unknown;
  try {
    m = JSON.parse(text);
  } catch {
    return null;
  }
  if (!m || typeof m !== 'object' || typeof (m as { type?: unknown }).type !== 'string') return null;
  const src = m as Record<string, unknown>;
  const ev: AuditEvent = { type: src.type as string };
  for (const f of STRING_FIELDS) if (typeof src[f] === 'string') ev[f] = src[f] as string;
  if (typeof src.serial === 'number' || (typeof src.serial === 'string' && /^\d+$/.test(src.serial))) ev.serial = Number(src.serial);
  if (typeof src.timestamp === 'number') ev.timestamp = src.timestamp;
  ev.sequenceNumber = meta.sequenceNumber;
  if (meta.consensusTimestamp) ev.consensusTimestamp = meta.consensusTimestamp;
  return ev;
}
