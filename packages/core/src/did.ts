/**
 * DIDs of this service (DESIGN.md section 6): did:hedera:{network}:{accountId} for ledger accounts
 * and did:pkh:eip155:{chainId}:{address} for EVM-backed agent cards.
 */
export const HEDERA_NETWORKS = ['local', 'testnet', 'mainnet', 'previewnet'] as const;
export type HederaNetwork = (typeof HEDERA_NETWORKS)[number];

export interface HederaDid {
  method: 'hedera';
  network: HederaNetwork;
  accountId: string;
  did: string;
}

const HEDERA_DID = /^did:hedera:(local|testnet|mainnet|previewnet):(0|[1-9]\d{0,9})\.(0|[1-9]\d{0,9})\.(0|[1-9]\d{0,18})$/;
const ACCOUNT_ID = /^(0|[1-9]\d{0,9})\.(0|[1-9]\d{0,9})\.(0|[1-9]\d{0,18})$/;

/** shard.realm.num: the form of every Hedera entity id (accounts, tokens, topics). */
export function isEntityId(value: string): boolean {
  return ACCOUNT_ID.test(value);
}

export const isAccountId = isEntityId;

/** Parses a ledger DID; null when it is not of the form did:hedera:{network}:{shard.realm.num}. */
export function parseHederaDid(value: string): HederaDid | null {
  const m = HEDERA_DID.exec(value);
  if (!m) return null;
  return { method: 'hedera', network: m[1] as HederaNetwork, accountId: `${m[2]}.${m[3]}.${m[4]}`, did: value };
}

export function hederaDid(network: HederaNetwork, accountId: string): string {
  return `did:hedera:${network}:${accountId}`;
}

export interface PkhDid {
  method: 'pkh';
  chainId: number;
  address: string;
  did: string;
}

const PKH_DID = /^did:pkh:eip155:([1-9]\d{0,18}):(0x[0-9a-fA-F]{40})$/;

export function parsePkhDid(value: string): PkhDid | null {
  const m = PKH_DID.exec(value);
  if (!m) return null;
  return { method: 'pkh', chainId: Number(m[1]), address: m[2], did: value };
}
