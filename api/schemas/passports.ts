/** zod schemas of the passport, DID, audit, admin and x402-discovery routes (SPEC sections 2 and 4.1). */
import { z } from 'zod';
import { LIMITS, didString, entityIdString, httpUrl, linkMapSchema, paginationQuery, tierString } from './common.js';

export const passportRequestBodySchema = z
  .object({
    did: didString.optional().describe('The requesting DID; when given it must equal the signing DID (X-Service-DID)'),
    tier: tierString.describe('bronze, silver, gold or platinum (GET /catalog)'),
    capabilities: z.array(z.string().max(LIMITS.capability)).max(16).optional().describe("A subset of the tier's capabilities; default: all of them"),
    endpoint: httpUrl.optional().describe("The agent's service endpoint (http or https), published in its DID document"),
  })
  .strict()
  .meta({ id: 'PassportRequest' });

export const passportIssuanceResultSchema = z
  .object({
    tokenId: z.string(),
    serialNumber: z.number().int(),
    did: z.string(),
    tier: z.string(),
    capabilities: z.array(z.string()).optional(),
    hashScanLink: z.string(),
    _links: linkMapSchema.optional(),
  })
  .meta({
    id: 'PassportIssuanceResult',
    // the x402 Bazaar extension of the 402 shows it as the paid route's output (api/plugins/x402Bazaar.ts)
    examples: [{ tokenId: '0.0.5005', serialNumber: 1, did: 'did:hedera:testnet:0.0.4321', tier: 'bronze', capabilities: ['api_call'], hashScanLink: 'https://hashscan.io/testnet/token/0.0.5005/1' }],
  });

export const passportSchema = z
  .object({
    active: z.boolean(),
    tokenId: z.string(),
    serialNumber: z.number().int(),
    tier: z.string().nullable(),
    capabilities: z.array(z.string()),
    did: z.string(),
    owner: z.string(),
    issuedAt: z.number().describe('Unix time in milliseconds'),
    endpoint: z.string().optional(),
    revokedAt: z.number().optional().describe('Unix time in milliseconds; only on revoked passports in lists'),
    hashScanLink: z.string().optional(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'Passport' });

export const passportPathParams = z.object({ tokenId: z.string().max(LIMITS.entityId), serial: z.string().max(LIMITS.serial) });

export const addressPassportsSchema = z
  .object({ address: z.string(), passports: z.array(passportSchema), count: z.number().int() })
  .meta({ id: 'AddressPassports' });

export const passportsQuerySchema = z
  .object({
    tokenId: entityIdString.optional().describe('Passport collection token id, e.g. 0.0.1234'),
    env: z.string().max(LIMITS.network).optional().describe('Ledger network name: local, testnet, mainnet or previewnet'),
    ...paginationQuery,
  })
  .strict();

export const passportListSchema = z
  .object({
    passports: z.array(passportSchema),
    count: z.number().int(),
    total: z.number().int(),
    limit: z.number().int(),
    offset: z.number().int(),
  })
  .meta({ id: 'PassportList' });

export const upgradeBodySchema = z
  .object({
    did: didString.optional().describe('The requesting DID; when given it must equal the signing DID'),
    tier: tierString.describe('The new tier, strictly above the current one'),
  })
  .strict()
  .meta({ id: 'PassportUpgradeRequest' });

export const upgradeResultSchema = z
  .object({
    upgraded: z.literal(true),
    tokenId: z.string(),
    serialNumber: z.number().int(),
    did: z.string(),
    oldTier: z.string(),
    newTier: z.string(),
    tier: z.string(),
    capabilities: z.array(z.string()),
    pricePaidTinybars: z.string(),
    hashScanLink: z.string(),
    _links: linkMapSchema.optional(),
  })
  .meta({
    id: 'PassportUpgradeResult',
    examples: [
      {
        upgraded: true,
        tokenId: '0.0.5005',
        serialNumber: 1,
        did: 'did:hedera:testnet:0.0.4321',
        oldTier: 'bronze',
        newTier: 'silver',
        tier: 'silver',
        capabilities: ['api_call', 'data_consume'],
        pricePaidTinybars: '1000000000',
        hashScanLink: 'https://hashscan.io/testnet/token/0.0.5005/1',
      },
    ],
  });

export const auditEventSchema = z
  .object({
    type: z.string(),
    did: z.string().optional(),
    tokenId: z.string().optional(),
    serial: z.number().optional(),
    timestamp: z.number().optional(),
    tier: z.string().optional(),
    oldTier: z.string().optional(),
    newTier: z.string().optional(),
    reason: z.string().optional(),
    paymentTransactionId: z.string().optional().describe('payment.reconciled: the payment the reconciler settled'),
    outcome: z.string().optional().describe('payment.reconciled: issued, upgraded or refunded'),
    refundTransactionId: z.string().optional().describe('payment.reconciled: the refund transfer'),
    sequenceNumber: z.number().int().optional(),
    consensusTimestamp: z.string().optional(),
  })
  .meta({ id: 'AuditEvent' });

export const auditResponseSchema = z
  .object({
    events: z.array(auditEventSchema),
    total: z.number().int().describe('Events of this passport in the projection'),
    limit: z.number().int(),
    offset: z.number().int(),
  })
  .meta({ id: 'AuditEvents' });

export const auditQuerySchema = z.object({ ...paginationQuery }).strict();

export const revokeBodySchema = z
  .object({
    tokenId: entityIdString,
    serial: z.union([z.number().int().min(1).max(Number.MAX_SAFE_INTEGER), z.string().max(LIMITS.serial).regex(/^\d+$/)]),
    reason: z.string().max(LIMITS.reason).optional(),
  })
  .strict()
  .meta({ id: 'RevokeRequest' });

export const revokeResultSchema = z
  .object({
    revoked: z.literal(true),
    tokenId: z.string(),
    serialNumber: z.number().int(),
    did: z.string(),
    reason: z.string().nullable(),
    revokedAt: z.number(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'RevokeResult' });
