// x402 network ids for Hedera (CAIP-2 style `namespace:reference`, as @x402/core expects):
// hedera:mainnet, hedera:testnet, hedera:previewnet, and hedera:local for our localnet.
import type { HederaNetwork as HederaNetworkName } from '../did.js';

export const HEDERA_NAMESPACE = 'hedera';
export const HBAR_ASSET = '0.0.0';
export const EXACT_SCHEME = 'exact';

export function x402NetworkId(network: HederaNetworkName): `hedera:${HederaNetworkName}` {
  return `${HEDERA_NAMESPACE}:${network}`;
}

export function parseX402Network(id: string): HederaNetworkName | null {
  const m = /^hedera:(local|testnet|mainnet|previewnet)$/.exec(id);
  return m ? (m[1] as HederaNetworkName) : null;
}

export function isHederaNetwork(id: string): boolean {
  return parseX402Network(id) !== null;
}

/** Hedera account / entity id `shard.realm.num`. */
export const ENTITY_ID = /^\d+\.\d+\.\d+$/;
