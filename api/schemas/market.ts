/** zod schemas of the marketplace routes (SPEC 2 "Task", 4.4a; DESIGN.md section 10 "Marketplace"). */
import { z } from 'zod';
import {
  DESCRIPTION_MAX,
  ESCROW_STATUSES,
  PRICE_HBAR_MAX,
  RESULT_BODY_MAX_BYTES,
  RESULT_IPFS_MAX,
  TASK_CAPABILITIES_MAX,
  TASK_CAPABILITY_MAX_LENGTH,
  TASK_STATUSES,
  TITLE_MAX,
  TITLE_MIN,
  VERIFIER_TYPES,
  TASK_WINDOW_MAX_HOURS,
  TASK_WINDOW_MIN_HOURS,
} from '../../domain/market.js';
import { didString, linkMapSchema, paginationQuery } from './common.js';
import { IDEMPOTENCY_KEY_PATTERN } from '../../domain/idempotency.js';

const privateKeyString = (who: string) =>
  z.string().min(1).max(256).describe(`The ${who} account's private key (DER hex, or 0x-hex ECDSA). Used in memory to sign, never stored, logged or returned`);

export const taskCapabilityString = z
  .string()
  .min(1)
  .max(TASK_CAPABILITY_MAX_LENGTH)
  .regex(/^[a-z0-9][a-z0-9_.-]*$/, 'lower-case letters, digits, _ . -');

export const priceHbarNumber = z.number().positive().max(PRICE_HBAR_MAX).describe('Price in HBAR (at most 8 decimals: 1 tinybar)');

const postFields = {
  posterDid: didString.describe('The poster (did:hedera:{network}:{accountId}); must hold an active passport'),
  title: z.string().min(TITLE_MIN).max(TITLE_MAX),
  description: z.string().max(DESCRIPTION_MAX).optional(),
  priceHbar: priceHbarNumber,
  capabilities: z.array(taskCapabilityString).max(TASK_CAPABILITIES_MAX).optional().describe('Capabilities a claimer needs (the list filter matches them)'),
  verifierType: z.enum(VERIFIER_TYPES).optional().describe('How POST /verify checks a delivery (default none)'),
  verifierConfig: z
    .record(z.string().max(64), z.unknown())
    .optional()
    .describe('Verifier settings: http {url}, json_schema {schema}, sha256 {sha256?}'),
  deadline: z.iso.datetime({ offset: true }).optional().describe('ISO time; an unfinished task is cancelled and refunded then'),
  escrow: z.boolean().optional().describe('Hold the price in escrow as a scheduled transfer (default true); false: the poster pays the claimer directly at completion'),
  claimWindowHours: z
    .number()
    .min(TASK_WINDOW_MIN_HOURS)
    .max(TASK_WINDOW_MAX_HOURS)
    .optional()
    .describe('Hours a claim may stay undelivered before it lapses and the task is posted again (default MARKET_CLAIM_WINDOW_S, 24 h)'),
  reviewWindowHours: z
    .number()
    .min(TASK_WINDOW_MIN_HOURS)
    .max(TASK_WINDOW_MAX_HOURS)
    .optional()
    .describe(
      'Escrow tasks: hours after delivery the poster has to complete or cancel; then the escrow is released to the claimer (default MARKET_REVIEW_WINDOW_S, 72 h)',
    ),
};

export const taskPostBodySchema = z.object(postFields).strict().meta({ id: 'TaskPost' });
export const taskPostSignedBodySchema = z
  .object({ ...postFields, posterPrivateKey: privateKeyString('poster') })
  .strict()
  .meta({ id: 'TaskPostSigned' });

/** The optional Idempotency-Key header of the two posting routes (domain/idempotency.ts). */
export const taskPostHeadersSchema = z.object({
  'idempotency-key': z
    .string()
    .regex(IDEMPOTENCY_KEY_PATTERN, 'must be 1-64 characters of A-Z a-z 0-9 . _ : -')
    .optional()
    .describe(
      'Idempotency-Key (IETF draft): a retry of the same post with the same key and body answers the same task instead of creating another; ' +
        'scoped to posterDid, kept 24 h; the same key with another body is 409 idempotency_key_reused',
    ),
});

export const taskIdParams = z.object({ taskId: z.string().min(1).max(64) });

/**
 * The optional DID signature headers of GET /market/tasks/{taskId} (SPEC 5 "DID signature"): sent by
 * the poster or the claimer, the answer carries the delivered result before the task is completed.
 */
export const taskReadHeadersSchema = z.object({
  'x-service-did': z.string().optional().describe("Optional: the reader's DID. With X-Service-Challenge and X-Service-Signature, the task's poster and claimer read resultBody and resultIpfs before completion"),
  'x-service-challenge': z.string().optional().describe('Optional: a challenge from GET /auth/challenge?did=<DID> (single use)'),
  'x-service-signature': z.string().optional().describe("Optional: the challenge signed with the DID's account key (hex)"),
});

export const claimBodySchema = z.object({ claimerDid: didString }).strict().meta({ id: 'TaskClaim' });
export const claimWithKeyBodySchema = z.object({ claimerDid: didString, claimerPrivateKey: privateKeyString('claimer') }).strict().meta({ id: 'TaskClaimWithKey' });

// resultBody is bounded by bytes in the handler (400 above 4096 bytes of UTF-8); the character
// bound here only keeps absurd bodies out.
const deliverFields = {
  claimerDid: didString,
  resultBody: z.string().max(RESULT_BODY_MAX_BYTES * 4).optional().describe(`The result, at most ${RESULT_BODY_MAX_BYTES} bytes of UTF-8`),
  resultIpfs: z.string().max(RESULT_IPFS_MAX).optional().describe('A result stored elsewhere: ipfs://<CID>[/path]'),
};
export const deliverBodySchema = z.object(deliverFields).strict().meta({ id: 'TaskDeliver' });
export const deliverWithKeyBodySchema = z.object({ ...deliverFields, claimerPrivateKey: privateKeyString('claimer') }).strict().meta({ id: 'TaskDeliverWithKey' });

export const posterBodySchema = z.object({ posterDid: didString, reason: z.string().max(500).optional() }).strict().meta({ id: 'TaskPosterAction' });
export const increaseRewardBodySchema = z.object({ posterDid: didString, newPriceHbar: priceHbarNumber }).strict().meta({ id: 'TaskIncreaseReward' });

export const completeBodySchema = z
  .object({
    posterDid: didString,
    posterPrivateKey: privateKeyString('poster').optional(),
    txBytes: z.string().min(1).max(16_384).regex(/^[A-Za-z0-9+/]+={0,2}$/, 'must be base64').optional().describe('Tasks without escrow: the payment transfer (POST prepare-payment)'),
    publicKey: z.string().max(200).optional(),
    signature: z.string().max(300).optional(),
  })
  .strict()
  .meta({ id: 'TaskComplete' });
export const completeWithKeyBodySchema = z.object({ posterDid: didString, posterPrivateKey: privateKeyString('poster') }).strict().meta({ id: 'TaskCompleteWithKey' });

export const taskSchema = z
  .object({
    taskId: z.string(),
    title: z.string(),
    description: z.string(),
    priceHbar: z.number(),
    capabilities: z.array(z.string()),
    status: z.enum(TASK_STATUSES),
    posterDid: z.string(),
    claimerDid: z.string().nullable(),
    scheduleId: z.string().nullable(),
    topUpScheduleId: z.string().nullable(),
    escrowStatus: z.enum(ESCROW_STATUSES),
    escrow: z.boolean(),
    verificationAttempts: z.number(),
    verifierType: z.enum(VERIFIER_TYPES),
    verifierConfig: z.record(z.string(), z.unknown()).nullable(),
    deadline: z.string().nullable(),
    resultBody: z
      .string()
      .nullable()
      .optional()
      .describe('The delivered result. Until the task is completed, only in answers to its poster and its claimer (a DID-signed GET /market/tasks/{taskId}); left out for everyone else'),
    resultIpfs: z.string().nullable().optional().describe('The delivered result stored elsewhere (ipfs://...); shown as resultBody is'),
    resultSha256: z.string().nullable().describe('sha256 hex of resultBody, public once delivered (anyone can check a result they are given against it)'),
    paymentTxId: z.string().nullable(),
    refundTxId: z.string().nullable(),
    createdAt: z.string(),
    updatedAt: z.string(),
    claimWindowSeconds: z.number().optional().describe('A claim with no delivery lapses after this many seconds (the task is posted again)'),
    claimEndsAt: z.string().nullable().optional().describe('While claimed: when the claim lapses without a delivery'),
    reviewWindowSeconds: z
      .number()
      .nullable()
      .optional()
      .describe('Escrow tasks: seconds after delivery the poster has to complete or cancel before the escrow is released to the claimer'),
    reviewEndsAt: z.string().nullable().optional().describe('While delivered (escrow): when the escrow is released to the claimer unless the poster completes or cancels first'),
    fundingWindowSeconds: z.number().nullable().optional().describe('Escrow tasks: seconds after posting the escrow may stay unfunded'),
    fundingEndsAt: z.string().nullable().optional().describe('While the escrow is not funded: when the task is cancelled for want of funding'),
    deliveredAt: z.string().nullable().optional(),
    verification: z
      .object({
        passed: z.boolean(),
        reasons: z.array(z.string()),
        at: z.string(),
        runs: z.number(),
        inconclusive: z.boolean().optional(),
      })
      .nullable()
      .optional()
      .describe("The delivery's verification outcome (POST /verify answers it again)"),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'Task' });

export const taskListQuerySchema = z
  .object({
    ...paginationQuery,
    capability: taskCapabilityString.optional(),
    status: z.enum(TASK_STATUSES).optional(),
    posterDid: didString.optional(),
    claimerDid: didString.optional(),
  })
  .strict();

export const taskListSchema = z
  .object({
    tasks: z.array(taskSchema),
    count: z.number(),
    total: z.number(),
    limit: z.number(),
    offset: z.number(),
  })
  .meta({ id: 'TaskList' });

export const escrowStatusSchema = z
  .object({
    taskId: z.string(),
    scheduleId: z.string().nullable(),
    topUpScheduleId: z.string().nullable(),
    escrowStatus: z.enum(ESCROW_STATUSES),
    verificationAttempts: z.number(),
    verifierType: z.enum(VERIFIER_TYPES),
    priceHbar: z.number(),
    escrowAccountId: z.string(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'TaskEscrowStatus' });
