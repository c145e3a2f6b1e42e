/**
 * Account public keys for signature checks, read from the mirror node and cached briefly in
 * memory: signed requests are a hot path, and key rotations are rare (a rotated key is picked up
 * within the TTL).
 */
import type { PublicKey } from '@hashgraph/sdk';
import type { MirrorClient } from '../../ledger/mirror.js';
import { publicKeyFromMirror } from '@agent-passport/core/keys';

export interface AccountKeyResolver {
  /** The account's single public key; null when the account does not exist or has no single key. */
  resolve(accountId: string): Promise<PublicKey | null>;
}

export function mirrorAccountKeys(mirror: MirrorClient, ttlMs = 60_000): AccountKeyResolver {
  const cache = new Map<string, { key: PublicKey | null; until: number }>();
  return {
    async resolve(accountId) {
      const hit = cache.get(accountId);
      if (hit && hit.until > Date.now()) return hit.key;
      const account = await mirror.getAccount(accountId);
      const key = publicKeyFromMirror(account?.key ?? null);
      // Unknown accounts are cached for a shorter time: they may be created any moment.
      cache.set(accountId, { key, until: Date.now() + (key ? ttlMs : Math.min(ttlMs, 5_000)) });
      if (cache.size > 10_000) cache.delete(cache.keys().next().value!);
      return key;
    },
  };
}
