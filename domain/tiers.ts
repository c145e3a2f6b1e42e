/**
 * The passport tier catalog: the one price list. GET /catalog, GET /api/meta/fees, the x402
 * payment requirements and the /pricing page all read it (DESIGN.md section 6).
 */
import type { Capability } from './capabilities.js';

export const TIERS = ['bronze', 'silver', 'gold', 'platinum'] as const;
export type Tier = (typeof TIERS)[number];

export interface TierEntry {
  name: Tier;
  /** Price in HBAR. */
  price: number;
  capabilities: Capability[];
}

export const TIER_CATALOG: readonly TierEntry[] = [
  { name: 'bronze', price: 5, capabilities: ['api_call', 'data_consume'] },
  { name: 'silver', price: 25, capabilities: ['api_call', 'data_consume', 'data_provide'] },
  { name: 'gold', price: 100, capabilities: ['api_call', 'data_consume', 'data_provide', 'payment'] },
  { name: 'platinum', price: 500, capabilities: ['api_call', 'data_consume', 'data_provide', 'payment', 'orchestration'] },
];

export const TINYBARS_PER_HBAR = 100_000_000n;

export function isTier(value: string): value is Tier {
  return (TIERS as readonly string[]).includes(value);
}

export function tierEntry(tier: Tier): TierEntry {
  const entry = TIER_CATALOG.find((t) => t.name === tier);
  if (!entry) throw new Error(`unknown tier ${tier}`);
  return entry;
}

/** 0 for bronze up to 3 for platinum: the ascending order of SPEC section 2. */
export function tierRank(tier: Tier): number {
  return TIERS.indexOf(tier);
}

export function tierPriceTinybars(tier: Tier): bigint {
  return BigInt(tierEntry(tier).price) * TINYBARS_PER_HBAR;
}

/** An upgrade costs the price difference; only strictly higher tiers are eligible. */
export function upgradePriceTinybars(from: Tier, to: Tier): bigint | null {
  if (tierRank(to) <= tierRank(from)) return null;
  return tierPriceTinybars(to) - tierPriceTinybars(from);
}

/** Requested capabilities must be a subset of the tier's. Returns the ones outside it. */
export function capabilitiesOutsideTier(tier: Tier, requested: readonly string[]): string[] {
  const allowed = new Set<string>(tierEntry(tier).capabilities);
  return requested.filter((c) => !allowed.has(c));
}
