/**
 * The parties of a marketplace task: a DID of this network (400 otherwise) and the passport it must
 * hold (SPEC 2 trust ladder: gold or platinum to post and claim, an active passport for the other
 * steps), checked in the projection and on the ledger (api/passports/heldPassport.ts).
 */
import { ApiError, echo } from '../errors.js';
import { heldActivePassport } from '../passports/heldPassport.js';
import { parseHederaDid, type HederaDid } from '@agent-passport/core/did';
import { isMarketTier, MARKET_TIERS } from '../../domain/market.js';
import type { Market } from './state.js';

/** Parses a DID of this network; 400 otherwise. */
export function partyOf(market: Market, did: string, field: string): HederaDid {
  const network = market.ledger.deployment.network;
  const parsed = parseHederaDid(did);
  if (!parsed || parsed.network !== network) {
    throw new ApiError('invalid_request', `${field} ${echo(did)} is not a DID of ${network}`, { hint: `Use did:hedera:${network}:<accountId>` });
  }
  return parsed;
}

/** 403 passport_not_found unless the DID's passport is active in the projection and held by it on the ledger. */
export async function requireActivePassport(market: Market, party: HederaDid, role: string): Promise<void> {
  await activePassportOf(market, party, role);
}

async function activePassportOf(market: Market, party: HederaDid, role: string) {
  const row = await heldActivePassport(market.ctx, party.accountId);
  if (!row) {
    throw new ApiError('passport_not_found', `The ${role} ${party.did} has no active passport (missing or revoked)`, {
      status: 403,
      hint: 'Buy a passport with POST /passport/request first',
    });
  }
  return row;
}

/**
 * Posting and claiming (SPEC 2 trust ladder, marketplace_participant): the passport must be active,
 * held on the ledger (403 passport_not_found) and gold or platinum (403 market_tier_required, the hint
 * naming the tier needed and how to get it).
 */
export async function requireMarketPassport(market: Market, party: HederaDid, role: string): Promise<void> {
  const row = await activePassportOf(market, party, role);
  if (!isMarketTier(row.tier)) {
    throw new ApiError('market_tier_required', `The ${role} ${party.did} holds a ${row.tier} passport; the marketplace is for ${MARKET_TIERS.join(' and ')} passports`, {
      hint: `Upgrade to gold: POST /passport/${row.token_id}/${row.serial}/upgrade with { "tier": "gold" } (GET /api/meta/trust-tiers: marketplace_participant)`,
    });
  }
}
