/** zod schemas of the trust snapshot (SPEC section 2 "Trust snapshot") and the rule catalog (/rules). */
import { z } from 'zod';
import { linkMapSchema } from './common.js';

export const domainOwnershipSchema = z.object({
  method: z.string(),
  verified: z.boolean(),
  verified_at: z.string().nullable(),
  challenge_token: z.string().describe('the value the proven challenge published: its token, or for a challenge issued without a DID base64url(sha256(token)); empty when not verified'),
  proof: z.string(),
  verified_by: z.string().optional().describe('the DID that proved the ownership (signed POST .../verify-ownership)'),
  expires_at: z.string().optional().describe('when the proof stops counting; a new challenge proven the same way renews it'),
});

export const onChainSchema = z.object({
  chain: z.string(),
  chain_id: z.number(),
  contract_address: z.string(),
  token_id: z.number(),
  attested_at: z.string(),
  attested_by: z.string(),
  tx_hash: z.string(),
  revoked: z.boolean(),
});

export const trustSnapshotSchema = z
  .object({
    snapshot_version: z.string(),
    spec_version: z.string(),
    domain: z.string(),
    generated_at: z.string(),
    profile_ref: z.object({ profile_version: z.string(), profile_hash: z.string(), endpoint: z.string() }),
    evidence_root: z.object({ assertion_count: z.number(), evidence_hashes: z.array(z.string()), merkle_root: z.string(), computed_at: z.string() }),
    score_summary: z.object({ total: z.number(), grade: z.string(), verified_rules: z.number(), total_rules: z.number(), gaps: z.number(), conflicts: z.number() }),
    rule_results: z
      .array(z.object({ id: z.string(), result: z.enum(['passed', 'gap', 'conflict']), detail: z.string(), evidence_hash: z.string() }))
      .describe('One entry per rule in catalog order: its result and the evidence hash it contributed (part of the signed content).'),
    domain_ownership: domainOwnershipSchema,
    integrity: z.object({ snapshot_hash: z.string(), signature_algorithm: z.string(), signature: z.string(), public_key: z.string(), key_id: z.string() }),
    on_chain: onChainSchema.optional(),
    _links: linkMapSchema.optional(),
  })
  .meta({ id: 'TrustSnapshot' });

export const trustDomainParams = z.object({ domain: z.string().min(1).max(300) });

export const publicRuleSchema = z
  .object({
    id: z.string(),
    title: z.string(),
    why: z.string(),
    fix: z.string(),
    weight: z.number(),
    fetches: z.object({ method: z.literal('GET'), path: z.string(), accept: z.string() }),
    passes_when: z.string(),
  })
  .meta({ id: 'TrustRule' });

export const ruleCatalogSchema = z
  .object({
    profile_version: z.string(),
    profile_hash: z.string().describe('sha256 hex of the RFC 8785 JSON of { profile_version, rules }'),
    rules: z.array(publicRuleSchema),
  })
  .meta({ id: 'TrustRuleCatalog' });

export const ruleParams = z.object({ id: z.string().min(1).max(64) });
