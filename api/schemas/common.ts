/** zod schemas shared by many routes. */
import { z } from 'zod';
import { CAPABILITIES } from '../../domain/capabilities.js';
import { TIERS } from '../../domain/tiers.js';

export const errorBodySchema = z
  .object({
    error: z.string(),
    code: z.string(),
    retryable: z.boolean().optional(),
    hint: z.string().optional(),
  })
  .loose()
  .meta({ id: 'ErrorBody' });

export const linkMapSchema = z.record(z.string(), z.object({ href: z.string(), method: z.enum(['GET', 'POST']).optional() }));

export const tierSchema = z.enum(TIERS);
export const capabilitySchema = z.enum(CAPABILITIES);

/** limit default 20, max 100; offset >= 0 (DESIGN.md section 6). */
export const paginationQuery = {
  limit: z.coerce.number().int().min(1).max(100).default(20),
  offset: z.coerce.number().int().min(0).default(0),
};

/** Error responses a route documents, keyed by status. */
export function errorResponses(...statuses: number[]): Record<number, typeof errorBodySchema> {
  return Object.fromEntries(statuses.map((s) => [s, errorBodySchema]));
}
