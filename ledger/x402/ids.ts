// One form for the ids an x402 payment is known by, whatever form a facilitator (or the SDK, or the
// mirror) used: the x402 gate records the payment under these, the passport routes look it up and
// claim with them, and the workflows receive them. @x402/core types both as free strings.
//
//   transaction id: 0.0.5@1700000000.000000001 (SDK)  = 0.0.5-1700000000-000000001 (mirror)
//                   -> 0.0.5@1700000000.000000001 (nanos always 9 digits, as the SDK prints them)
//   payer:          0.0.5 = 0.0.5-vfmkw (checksum) = hedera:testnet:0.0.5 (CAIP-10) -> 0.0.5
const ENTITY = '(0|[1-9]\\d{0,9})\\.(0|[1-9]\\d{0,9})\\.(0|[1-9]\\d{0,18})';
const SDK_TX = new RegExp(`^${ENTITY}@(\\d{1,19})\\.(\\d{1,9})$`);
const MIRROR_TX = new RegExp(`^${ENTITY}-(\\d{1,19})-(\\d{1,9})$`);
const PAYER = new RegExp(`^(?:hedera:(?:local|testnet|mainnet|previewnet):)?${ENTITY}(?:-[a-z]{5})?$`);

/**
 * The canonical (SDK) form of a top-level transaction id given in SDK or mirror form; null for
 * anything else (scheduled or child ids, nonces, garbage). Short nanos count as nanoseconds, as
 * TransactionId.fromString reads them ("@1700000000.1" is 1 ns).
 */
export function normalizeTransactionId(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 80) return null;
  const s = value.trim();
  const m = SDK_TX.exec(s) ?? MIRROR_TX.exec(s);
  if (!m) return null;
  const seconds = BigInt(m[4]).toString();
  return `${m[1]}.${m[2]}.${m[3]}@${seconds}.${m[5].padStart(9, '0')}`;
}

/** The shard.realm.num form of a payer account given plain, with a checksum or CAIP-10 prefixed; null otherwise. */
export function normalizePayer(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 80) return null;
  const m = PAYER.exec(value.trim().toLowerCase());
  return m ? `${m[1]}.${m[2]}.${m[3]}` : null;
}
