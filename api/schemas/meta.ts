import { z } from 'zod';
import { FEE_CATEGORIES } from '../../domain/fees.js';
import { RECOVERY_ACTIONS } from '../../domain/errors.js';
import { capabilitySchema, tierSchema } from './common.js';

export const catalogTierSchema = z.object({ name: tierSchema, price: z.number(), capabilities: z.array(capabilitySchema) });
/** SPEC 4.1: the output of GET /catalog is the tiers array itself. */
export const catalogResponseSchema = z.array(catalogTierSchema).meta({ id: 'Catalog' });

export const errorCatalogEntrySchema = z.object({
  code: z.string(),
  http_status: z.number().int(),
  agent_impact: z.string(),
  hint_template: z.string(),
  affected_routes: z.array(z.string()),
  recovery_action: z.enum(RECOVERY_ACTIONS),
  charge: z.literal('never').optional(),
});
export const errorCatalogSchema = z
  .object({
    total_count: z.number().int(),
    count: z.number().int(),
    errors: z.array(errorCatalogEntrySchema),
    service_errors: z.array(errorCatalogEntrySchema).describe('Protocol-level codes this service also returns (malformed requests, admin authentication, pending work).'),
  })
  .meta({ id: 'ErrorCatalog' });

export const feeItemSchema = z.object({
  service: z.string(),
  category: z.enum(FEE_CATEGORIES),
  price_usd: z.number().nullable(),
  price_hbar: z.number().nullable(),
  unit: z.string(),
  description: z.string(),
  free_tier: z.boolean(),
  notes: z.string().optional(),
});
export const feeCatalogSchema = z
  .object({ total_count: z.number().int(), currency_note: z.string(), network: z.string(), fees: z.array(feeItemSchema) })
  .meta({ id: 'FeeCatalog' });

export const trustTierSchema = z.object({
  name: z.string(),
  level: z.number().int().min(0).max(5),
  description: z.string(),
  unlocks: z.array(z.string()),
  requirements: z.array(z.string()),
});
export const trustTiersSchema = z.object({ total_count: z.number().int(), tiers: z.array(trustTierSchema) }).meta({ id: 'TrustTiers' });
