/** zod schemas of the registry key routes (SPEC 2 "Registry api key", 4.6; DESIGN.md section 10). */
import { z } from 'zod';
import { parseHederaDid } from '@agent-passport/core/did';
import { REGISTRY_LIMITS } from '../../domain/registry.js';
import { LIMITS } from './common.js';

const NO_CONTROL_CHARS = /^[^\p{Cc}]*$/u;

export const registryRegisterBodySchema = z
  .object({
    name: z
      .string()
      .trim()
      .min(REGISTRY_LIMITS.nameMin)
      .max(REGISTRY_LIMITS.nameMax)
      .regex(NO_CONTROL_CHARS, 'must not contain control characters')
      .describe('1-64 characters'),
    owner: z
      .string()
      .max(LIMITS.did)
      .refine((v) => parseHederaDid(v) !== null, 'must be a DID of the form did:hedera:{network}:{accountId}')
      .optional()
      .describe(
        "The owner's DID (did:hedera:{network}:{accountId}) on this service's network: selects the sponsored registration, whose directory record the service pays for (daily budget, UTC reset). Omitted: the plain registration, outside the sponsored budget",
      ),
  })
  .strict()
  .meta({ id: 'RegistryRegistration' });

export const registryRecordSchema = z
  .object({
    id: z.string().describe('Registration id (uuid); also the OAuth client_id'),
    name: z.string(),
    owner: z.string().nullable(),
    sponsored: z.boolean(),
    status: z.enum(['active', 'revoked']),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
    key_prefix: z.string().describe('The first 12 characters of the key (apk_ and 8 more), to tell keys apart'),
    directory_record: z
      .object({
        status: z.enum(['pending', 'written', 'failed']),
        sequence_number: z.number().nullable(),
        transaction_id: z.string().nullable(),
      })
      .optional()
      .describe('Sponsored registrations: the registry.sponsored message on the directory topic, paid by the service'),
  })
  .meta({ id: 'RegistryRecord' });

export const registryRegisteredSchema = registryRecordSchema
  .extend({ api_key: z.string().describe('apk_ + 43 base64url characters; shown this once, only its sha256 is kept') })
  .meta({ id: 'RegistryRegistered' });
