/**
 * The evidence Merkle tree of a trust snapshot (DESIGN.md section 10, published at /rules):
 *  - leaves: the evidence hashes (64 hex chars, sha256) in rule-catalog order;
 *  - a parent is sha256 of the two children's raw 32 bytes concatenated (left then right);
 *  - on a level with an odd number of nodes the last node is promoted to the next level unchanged
 *    (not hashed with itself);
 *  - the root of one leaf is that leaf; there is always at least one leaf.
 */
import { createHash } from 'node:crypto';

const HEX32 = /^[0-9a-f]{64}$/;

export function merkleParent(left: string, right: string): string {
  return createHash('sha256').update(Buffer.from(left, 'hex')).update(Buffer.from(right, 'hex')).digest('hex');
}

/** Merkle root (lower-case hex) of sha256 hex leaves, by the convention above. */
export function merkleRoot(leaves: readonly string[]): string {
  if (leaves.length === 0) throw new Error('a Merkle tree needs at least one leaf');
  for (const leaf of leaves) if (!HEX32.test(leaf)) throw new Error(`leaf is not a lower-case sha256 hex: ${leaf.slice(0, 70)}`);
  let level = [...leaves];
  while (level.length > 1) {
    const next: string[] = [];
    for (let i = 0; i + 1 < level.length; i += 2) next.push(merkleParent(level[i]!, level[i + 1]!));
    if (level.length % 2 === 1) next.push(level[level.length - 1]!);
    level = next;
  }
  return level[0]!;
}
