/**
 * Whether an account holds an active passport, as the routes that only passport holders may use
 * decide it (A2A messages, trust attestations): active in the PostgreSQL projection AND its NFT
 * held by that account on the ledger (mirror getNftHolder), since the projection can lag a wipe or
 * revocation. A mirror that cannot answer is 503 service_unavailable, never "no passport".
 */
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { findActivePassportByAccount, type PassportRow } from '../../db/queries/passports.js';

/** The account's active passport row when the account holds its NFT on the ledger, else null. */
export async function heldActivePassport(ctx: AppContext, accountId: string): Promise<PassportRow | null> {
  const ledger = ctx.ledger!;
  const row = await findActivePassportByAccount(ctx.sql!, ledger.deployment.network, accountId);
  if (!row) return null;
  let holder: string | null;
  try {
    holder = await ledger.mirror.getNftHolder(row.token_id, Number(row.serial));
  } catch {
    throw new ApiError('service_unavailable', 'The ledger mirror is unavailable, so the passport cannot be checked', { hint: 'Retry after 30 seconds' });
  }
  return holder === accountId ? row : null;
}
