/** zod schemas of the discovery routes (SPEC 4.7; RFC 7033 WebFinger query). */
import { z } from 'zod';

export const webfingerQuerySchema = z.object({
  resource: z.string().min(1).max(512).describe('The agent DID (did:hedera:{network}:{accountId}); required (400 without)'),
  rel: z
    .union([z.string().max(256), z.array(z.string().max(256)).max(16)])
    .optional()
    .describe('Link relations to keep (RFC 7033 4.3); repeatable'),
});

export const jrdSchema = z
  .object({
    subject: z.string(),
    links: z.array(z.object({ rel: z.string(), href: z.string(), type: z.string().optional() })),
  })
  .meta({ id: 'WebFingerJrd' });
