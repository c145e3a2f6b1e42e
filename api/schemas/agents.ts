/** zod schemas of the directory routes (SPEC 2 "Agent directory entry", 4.2, 4.3 rebuild-cache; DESIGN.md section 10). */
import { z } from 'zod';
import { DIRECTORY_LIMITS } from '../../domain/directory.js';
import { CARD_VERIFICATION_REASONS, type CardVerificationReason } from '../../domain/agentCardSignature.js';

const CARD_VERIFICATION_CODES = Object.keys(CARD_VERIFICATION_REASONS) as [CardVerificationReason, ...CardVerificationReason[]];
import { LIMITS, capabilitySchema, didString, httpUrl, linkMapSchema, paginationQuery } from './common.js';

const NO_CONTROL_CHARS = /^[^\p{Cc}]*$/u;

export const agentRegisterBodySchema = z
  .object({
    did: didString.describe('The agent DID; must equal the signing DID (X-Service-DID)'),
    name: z
      .string()
      .trim()
      .min(DIRECTORY_LIMITS.nameMin)
      .max(DIRECTORY_LIMITS.nameMax)
      .regex(NO_CONTROL_CHARS, 'must not contain control characters')
      .describe('1-64 characters, unique case-insensitively'),
    capabilities: z
      .array(z.string().max(LIMITS.capability))
      .min(1)
      .max(16)
      .describe("A subset of the passport's capabilities (else 400 agent_capability_invalid)"),
    endpoint: httpUrl.describe("The agent's A2A endpoint (http or https)"),
    skills: z
      .array(z.string().trim().min(1).max(DIRECTORY_LIMITS.skillMax).regex(NO_CONTROL_CHARS, 'must not contain control characters'))
      .max(DIRECTORY_LIMITS.skillsMax)
      .optional()
      .describe('At most 20 skills of at most 48 characters'),
    description: z.string().trim().min(1).max(DIRECTORY_LIMITS.descriptionMax).optional(),
    agentCard: httpUrl
      .optional()
      .describe(
        "URL of the agent's A2A card, fetched by the service (5 s, 64 KB, public addresses only; loopback too in development); a card naming another DID answers 409. " +
          "A card signed by the DID's account key (A2A v1.0 section 8.4) shows cardVerified in the entry",
      ),
  })
  .strict()
  .meta({ id: 'AgentRegistration' });

/**
 * An agent's marketplace record (domain/marketRecord.ts), computed from the marketplace topic (the
 * task projection that mirrors it): tasks it posted, completed and cancelled after a delivery; as a
 * claimer, results it delivered and tasks it was paid for.
 */
export const marketRecordSchema = z
  .object({
    asPoster: z.object({
      posted: z.number().int(),
      completed: z.number().int(),
      cancelledAfterDelivery: z.number().int().describe('tasks cancelled (by the poster or a window) after the claimer had delivered'),
    }),
    asClaimer: z.object({
      delivered: z.number().int(),
      paid: z.number().int().describe('delivered tasks that completed: the claimer was paid'),
    }),
  })
  .describe("The agent's marketplace record, from the marketplace topic");

export const agentEntrySchema = z
  .object({
    did: z.string(),
    tokenId: z.string(),
    serial: z.number().int(),
    accountId: z.string(),
    name: z.string(),
    capabilities: z.array(z.string()),
    endpoint: z.string(),
    tier: z.string(),
    timestamp: z.number().describe('Registration time, Unix milliseconds'),
    active: z.boolean().describe('false once the passport is revoked'),
    skills: z.array(z.string()).optional(),
    description: z.string().optional(),
    agentCard: z.string().optional(),
    online: z
      .boolean()
      .nullable()
      .optional()
      .describe("Liveness: whether the last probe reached the agent's card or endpoint (probed at most every DIRECTORY_PROBE_EVERY_S); null before the first probe"),
    lastSeenAt: z.number().nullable().optional().describe("The last probe (or the registration's card fetch) the agent answered, Unix milliseconds; null: never"),
    stale: z.boolean().optional().describe('Not seen for DIRECTORY_STALE_AFTER_S (since its registration when never seen)'),
    cardVerified: z.boolean().optional().describe("The agent's A2A card carries a signature (A2A v1.0 section 8.4) by the account key of its DID; checked at registration and by each probe"),
    cardVerification: z
      .enum(CARD_VERIFICATION_CODES)
      .optional()
      .describe('Why the card is or is not verified: ' + CARD_VERIFICATION_CODES.map((c) => `${c} (${CARD_VERIFICATION_REASONS[c]})`).join('; ')),
    marketplace: marketRecordSchema.optional(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'AgentDirectoryEntry' });

export const agentsQuerySchema = z
  .object({
    ...paginationQuery,
    capability: capabilitySchema.optional().describe('Only agents with this capability'),
    skill: z.string().trim().min(1).max(DIRECTORY_LIMITS.skillMax).optional().describe('Only agents with this skill (case-insensitive)'),
    name: z.string().trim().min(1).max(DIRECTORY_LIMITS.nameMax).optional().describe('Case-insensitive substring of the name'),
    online: z
      .enum(['true', 'false'])
      .transform((v) => v === 'true')
      .optional()
      .describe('true: only agents the last probe reached; false: only the others (offline or not probed yet)'),
  })
  .strict();

export const agentListSchema = z
  .object({
    agents: z.array(agentEntrySchema),
    count: z.number().int().describe('entries in this page'),
    total: z.number().int().describe('entries matching the filters'),
    limit: z.number().int(),
    offset: z.number().int(),
  })
  .meta({ id: 'AgentList' });

export const agentDidParams = z.object({ did: didString });

export const rebuildResultSchema = z
  .object({
    rebuilt: z.literal(true),
    workflowId: z.string(),
    messages: z.number().int().describe('complete messages read from the directory topic'),
    registrations: z.number().int().describe('well-formed agent.registered messages'),
    agents: z.number().int().describe('directory entries written from the replay'),
    active: z.number().int().describe('active entries in the directory after the rebuild'),
    skipped: z.number().int().describe('messages that are not a well-formed agent.registered (other types on the topic, e.g. registry.sponsored), chunk groups that never completed, and repeated DIDs or names'),
    lastSequenceNumber: z.number().int(),
    startedAt: z.number(),
    finishedAt: z.number(),
  })
  .meta({ id: 'DirectoryRebuildResult' });
