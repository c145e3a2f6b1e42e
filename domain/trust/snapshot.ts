/**
 * The trust snapshot's pure parts (SPEC section 2 "Trust snapshot", DESIGN.md sections 6 and 10):
 * evidence hashes, score and grade, the profile reference, and the snapshot hash. Fetching and
 * signing live in api/trust/.
 *
 * Conventions (published at /rules, section "How to verify a snapshot"):
 *  - evidence of a rule = sha256 hex of the body bytes of its probe's HTTP answer, whatever the
 *    status; when no answer arrived, sha256 hex of the RFC 8785 JSON {"error": <reason>, "url": <url>};
 *  - evidence_root.merkle_root = merkleRoot(evidence_hashes) (domain/trust/merkle.ts);
 *  - snapshot_hash = sha256 hex of the RFC 8785 canonical JSON of the snapshot without its
 *    `integrity` and `on_chain` members;
 *  - score: total = round(100 * passed weight / all weight); grade by GRADE_THRESHOLDS.
 */
import { canonicalHash, sha256Hex } from './canonical.js';
import { PROFILE_VERSION, PUBLIC_RULES, type RuleResultKind } from './rules.js';

export const SNAPSHOT_VERSION = '1.0';
/** The interface version of SPEC section 9 that the snapshot follows. */
export const SPEC_VERSION = '0.13.0';
export const SIGNATURE_ALGORITHM = 'Ed25519';

/** Lowest total (0-100) for each grade, best first; below the last one the grade is F. */
export const GRADE_THRESHOLDS = [
  { grade: 'A', min: 85 },
  { grade: 'B', min: 70 },
  { grade: 'C', min: 55 },
  { grade: 'D', min: 40 },
  { grade: 'E', min: 25 },
] as const;

export function gradeFor(total: number): string {
  return GRADE_THRESHOLDS.find((g) => total >= g.min)?.grade ?? 'F';
}

export interface ScoreSummary {
  total: number;
  grade: string;
  verified_rules: number;
  total_rules: number;
  gaps: number;
  conflicts: number;
}

/** Weighted score over rule results: only passed rules earn their weight. */
export function scoreSummary(results: readonly { weight: number; result: RuleResultKind }[]): ScoreSummary {
  const all = results.reduce((s, r) => s + r.weight, 0);
  const earned = results.filter((r) => r.result === 'passed').reduce((s, r) => s + r.weight, 0);
  const total = all === 0 ? 0 : Math.round((100 * earned) / all);
  return {
    total,
    grade: gradeFor(total),
    verified_rules: results.filter((r) => r.result === 'passed').length,
    total_rules: results.length,
    gaps: results.filter((r) => r.result === 'gap').length,
    conflicts: results.filter((r) => r.result === 'conflict').length,
  };
}

/** The public rule catalog document (/rules.json) and its hash, the snapshot's profile. */
export const PROFILE_DOCUMENT = { profile_version: PROFILE_VERSION, rules: PUBLIC_RULES };
export const PROFILE_HASH = canonicalHash(PROFILE_DOCUMENT);

/** Evidence hash of one probe: its answer's body bytes, or the canonical failure description. */
export function evidenceHash(answer: { body: Uint8Array } | { error: string; url: string }): string {
  return 'body' in answer ? sha256Hex(answer.body) : canonicalHash({ error: answer.error, url: answer.url });
}

/** snapshot_hash: sha256 hex of the canonical JSON without integrity and on_chain. */
export function snapshotHash(snapshot: Record<string, unknown>): string {
  const { integrity: _integrity, on_chain: _onChain, ...rest } = snapshot;
  return canonicalHash(rest);
}
