/**
 * The passport tier catalog: the one price list. GET /catalog, GET /api/meta/fees, the x402
 * payment requirements and the /pricing page all read it (DESIGN.md section 6).
 */
import { CAPABILITIES, isCapability, type Capability } from './capabilities.js';

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

/**
 * A refusal of a passport request (issuance or upgrade), answered with its catalog code (domain/errors.ts);
 * shaped like domain/market.ts TaskRefusal, so the API and any other caller apply one rule with one message.
 */
export interface PassportRefusal {
  code: 'passport_tier_invalid' | 'invalid_request' | 'passport_upgrade_not_eligible';
  message: string;
  hint: string;
}

/** Why the tier a request names is refused (not a tier; the request's tier is at most 32 characters, quoted as sent), or null. */
export function tierRefusal(tier: string): PassportRefusal | null {
  if (isTier(tier)) return null;
  return { code: 'passport_tier_invalid', message: `Unknown tier ${JSON.stringify(tier)}`, hint: `Use one of ${TIERS.join(', ')} (GET /catalog)` };
}

/** Why a passport request's tier and capabilities are refused (unknown tier, unknown capabilities, capabilities outside the tier), or null. */
export function issuanceRefusal(r: { tier: string; capabilities?: readonly string[] }): PassportRefusal | null {
  if (!isTier(r.tier)) return tierRefusal(r.tier);
  const requested = r.capabilities ?? tierEntry(r.tier).capabilities;
  const unknown = requested.filter((c) => !isCapability(c));
  if (unknown.length) return { code: 'invalid_request', message: `Unknown capabilities: ${unknown.join(', ')}`, hint: `capabilities: use values from ${CAPABILITIES.join(', ')}` };
  const outside = capabilitiesOutsideTier(r.tier, requested);
  if (outside.length) {
    return { code: 'invalid_request', message: `Capabilities ${outside.join(', ')} are not part of the ${r.tier} tier`, hint: `capabilities: the ${r.tier} tier offers ${tierEntry(r.tier).capabilities.join(', ')}` };
  }
  return null;
}

/** The capabilities a passport of `tier` is issued with: the requested ones (default: all of the tier's), in catalog order. */
export function issuedCapabilities(tier: Tier, requested?: readonly string[]): Capability[] {
  const wanted = requested ?? tierEntry(tier).capabilities;
  return CAPABILITIES.filter((c) => wanted.includes(c));
}

/** Why moving a `from` passport up to `to` is refused (only strictly higher tiers are eligible), or null. */
export function upgradeRefusal(from: Tier, to: Tier): PassportRefusal | null {
  if (upgradePriceTinybars(from, to) !== null) return null;
  return { code: 'passport_upgrade_not_eligible', message: `Cannot move a ${from} passport to ${to}`, hint: `Choose a tier above ${from}` };
}
