/**
 * NFT metadata of a passport: a compact, versioned, human-readable encoding of tier and
 * capabilities within Hedera's 100-byte NFT metadata limit, e.g.
 * "ap/1 tier=gold caps=api_call,data_consume,data_provide,payment". An upgrade rewrites it in place.
 */
import { CAPABILITIES, isCapability, type Capability } from './capabilities.js';
import { isTier, type Tier } from './tiers.js';

export const METADATA_PREFIX = 'ap/1';
export const NFT_METADATA_LIMIT = 100;

export interface PassportMetadata {
  tier: Tier;
  capabilities: Capability[];
}

export function encodePassportMetadata(m: PassportMetadata): Uint8Array {
  // Canonical order so the same passport always encodes to the same bytes.
  const caps = CAPABILITIES.filter((c) => m.capabilities.includes(c));
  const text = `${METADATA_PREFIX} tier=${m.tier} caps=${caps.join(',')}`;
  const bytes = new TextEncoder().encode(text);
  if (bytes.length > NFT_METADATA_LIMIT) throw new Error(`passport metadata is ${bytes.length} bytes, over ${NFT_METADATA_LIMIT}`);
  return bytes;
}

/** Decodes metadata written by encodePassportMetadata; null for anything else. */
export function decodePassportMetadata(bytes: Uint8Array): PassportMetadata | null {
  const text = new TextDecoder().decode(bytes);
  const m = /^ap\/1 tier=([a-z]+) caps=([a-z_,]*)$/.exec(text);
  if (!m || !isTier(m[1])) return null;
  const caps = m[2] ? m[2].split(',') : [];
  if (!caps.every(isCapability)) return null;
  return { tier: m[1], capabilities: caps as Capability[] };
}
