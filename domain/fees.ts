/**
 * The fee catalog served at GET /api/meta/fees. Built from the tier catalog and the marketplace
 * fee the code charges, so the published fees cannot drift from what is charged.
 */
import { TIER_CATALOG, TIERS, tierEntry } from './tiers.js';

export const FEE_CATEGORIES = ['passport', 'marketplace', 'scan_api', 'badge_api', 'x402'] as const;
export type FeeCategory = (typeof FEE_CATEGORIES)[number];

export interface FeeItem {
  service: string;
  category: FeeCategory;
  price_usd: number | null;
  price_hbar: number | null;
  unit: string;
  description: string;
  free_tier: boolean;
  notes?: string;
}

export interface FeeCatalog {
  total_count: number;
  currency_note: string;
  network: string;
  fees: FeeItem[];
}

/** Marketplace fee on a payout, in tinybars, rounded down (the claimer never gets less than price - fee). */
export function marketFeeTinybars(priceTinybars: bigint, feeBps: number): bigint {
  return (priceTinybars * BigInt(feeBps)) / 10_000n;
}

export function buildFeeCatalog(opts: { network: string; marketFeeBps: number }): FeeCatalog {
  const passportFees: FeeItem[] = TIER_CATALOG.map((t) => ({
    service: `passport_${t.name}`,
    category: 'passport',
    price_usd: null,
    price_hbar: t.price,
    unit: 'one-time',
    description: `${t.name[0].toUpperCase()}${t.name.slice(1)} passport NFT with ${t.capabilities.join(', ')}`,
    free_tier: false,
  }));
  const upgradeFees: FeeItem[] = [];
  for (let i = 0; i < TIERS.length; i++) {
    for (let j = i + 1; j < TIERS.length; j++) {
      const from = tierEntry(TIERS[i]);
      const to = tierEntry(TIERS[j]);
      upgradeFees.push({
        service: `passport_upgrade_${from.name}_to_${to.name}`,
        category: 'passport',
        price_usd: null,
        price_hbar: to.price - from.price,
        unit: 'per-upgrade',
        description: `Upgrade a ${from.name} passport to ${to.name} in place (the price difference)`,
        free_tier: false,
      });
    }
  }
  const fees: FeeItem[] = [
    ...passportFees,
    ...upgradeFees,
    {
      service: 'marketplace_fee',
      category: 'marketplace',
      price_usd: null,
      price_hbar: null,
      unit: 'percentage',
      description: `Marketplace fee of ${opts.marketFeeBps / 100}% deducted from the task price when the claimer is paid`,
      free_tier: false,
      notes: `${opts.marketFeeBps} basis points of priceHbar; posting, claiming and delivering are free`,
    },
    {
      service: 'trust_scan',
      category: 'scan_api',
      price_usd: null,
      price_hbar: 0,
      unit: 'per-scan',
      description: 'Domain trust snapshot (GET /api/trust/{domain})',
      free_tier: true,
      notes: 'subject to the per-IP rate limit',
    },
    {
      service: 'trust_badge',
      category: 'badge_api',
      price_usd: null,
      price_hbar: 0,
      unit: 'per-request',
      description: 'Trust badge and snapshot reads',
      free_tier: true,
    },
    {
      service: 'x402_settlement',
      category: 'x402',
      price_usd: null,
      price_hbar: 0,
      unit: 'per-request',
      description: 'Settlement of an x402 payment through the facilitator',
      free_tier: true,
      notes: 'the facilitator pays the network fee; the payer pays only the stated amount',
    },
  ];
  return {
    total_count: fees.length,
    currency_note: 'Prices are in HBAR (1 HBAR = 100,000,000 tinybars); x402 payment requirements state amounts in tinybars. price_usd is null because prices are set in HBAR.',
    network: opts.network,
    fees,
  };
}
