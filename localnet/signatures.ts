// Signature checks as Hedera does them: a SignatureMap of (pubKeyPrefix, signature) pairs over the
// body bytes, matched against the primitive keys of a key structure (KeyList, ThresholdKey).
import { PublicKey } from '@hashgraph/sdk';
import { verifyEd25519 } from '@agent-passport/core/keys';
import type { pb as P } from './proto.js';

export type Key = P.IKey;
type Sigs = P.ISignatureMap | null | undefined;

export type KeyKind = 'ED25519' | 'ECDSA_SECP256K1';

/** Stable id of a primitive key ("ed:<hex>" / "ec:<hex>"); null for other key kinds. */
export function primitiveId(k: Key): string | null {
  if (k.ed25519 && k.ed25519.length) return 'ed:' + Buffer.from(k.ed25519).toString('hex');
  if (k.ECDSASecp256k1 && k.ECDSASecp256k1.length) return 'ec:' + Buffer.from(k.ECDSASecp256k1).toString('hex');
  return null;
}

export function primitiveFromId(id: string): Key {
  const bytes = Buffer.from(id.slice(3), 'hex');
  return id.startsWith('ed:') ? { ed25519: bytes } : { ECDSASecp256k1: bytes };
}

/** All primitive keys inside a key structure. */
export function primitiveKeys(k: Key | null | undefined, out: Key[] = []): Key[] {
  if (!k) return out;
  if (k.keyList) for (const c of k.keyList.keys ?? []) primitiveKeys(c, out);
  else if (k.thresholdKey) for (const c of k.thresholdKey.keys?.keys ?? []) primitiveKeys(c, out);
  else if (primitiveId(k)) out.push(k);
  return out;
}

/** A key structure that can sign at all (used to validate keys given in transactions). */
export function isValidKey(k: Key | null | undefined): boolean {
  if (!k) return false;
  if (k.ed25519) return k.ed25519.length === 32;
  if (k.ECDSASecp256k1) return k.ECDSASecp256k1.length === 33 || k.ECDSASecp256k1.length === 65;
  if (k.keyList) return (k.keyList.keys ?? []).every(isValidKey);
  if (k.thresholdKey) {
    const keys = k.thresholdKey.keys?.keys ?? [];
    const t = k.thresholdKey.threshold ?? 0;
    return t >= 1 && t <= keys.length && keys.every(isValidKey);
  }
  return false;
}

export interface SignerSet {
  /** True when this primitive key signed. */
  signed(k: Key): boolean;
}

/** Does the set of signers activate this key? KeyList needs all, ThresholdKey needs `threshold`. */
export function isSatisfied(k: Key | null | undefined, signers: SignerSet): boolean {
  if (!k) return false;
  if (k.keyList) return (k.keyList.keys ?? []).every((c) => isSatisfied(c, signers));
  if (k.thresholdKey) {
    const keys = k.thresholdKey.keys?.keys ?? [];
    let n = 0;
    for (const c of keys) if (isSatisfied(c, signers)) n++;
    return n >= (k.thresholdKey.threshold ?? 0);
  }
  if (primitiveId(k)) return signers.signed(k);
  return false; // contract ids and unsupported key kinds never sign here
}

function verifyOne(k: Key, message: Uint8Array, sig: Uint8Array): boolean {
  if (k.ed25519) return verifyEd25519(k.ed25519, message, sig);
  try {
    return PublicKey.fromBytesECDSA(k.ECDSASecp256k1!).verify(message, sig);
  } catch {
    return false;
  }
}

function isPrefix(prefix: Uint8Array, full: Uint8Array): boolean {
  if (prefix.length > full.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== full[i]) return false;
  return true;
}

/** Signers of one transaction: verifies lazily against its sigMap, caching per key. */
export class SigMapSigners implements SignerSet {
  private cache = new Map<string, { prefix: Uint8Array; signature: Uint8Array } | null>();
  constructor(
    private readonly bodyBytes: Uint8Array,
    private readonly sigMap: Sigs,
  ) {}

  signed(k: Key): boolean {
    const id = primitiveId(k);
    if (!id) return false;
    const hit = this.cache.get(id);
    if (hit !== undefined) return hit !== null;
    const isEd = id.startsWith('ed:');
    const full = (isEd ? k.ed25519 : k.ECDSASecp256k1)!;
    let ok: { prefix: Uint8Array; signature: Uint8Array } | null = null;
    for (const pair of this.sigMap?.sigPair ?? []) {
      const sig = isEd ? pair.ed25519 : pair.ECDSASecp256k1;
      if (!sig || !sig.length) continue;
      // Prefixes may be partial; an empty prefix matches any key.
      if (!isPrefix(pair.pubKeyPrefix ?? new Uint8Array(), full)) continue;
      if (verifyOne(k, this.bodyBytes, sig)) {
        ok = { prefix: pair.pubKeyPrefix ?? new Uint8Array(), signature: sig };
        break;
      }
    }
    this.cache.set(id, ok);
    return ok !== null;
  }

  /** The verified (prefix, signature) pair of a key that signed, for the mirror's schedule view. */
  pairFor(id: string): { prefix: Uint8Array; signature: Uint8Array } | null {
    return this.cache.get(id) ?? null;
  }

  /** Primitive keys whose full public key is the prefix and whose signature verifies. */
  fullKeySigners(): string[] {
    const out: string[] = [];
    for (const pair of this.sigMap?.sigPair ?? []) {
      const prefix = pair.pubKeyPrefix ?? new Uint8Array();
      let k: Key | null = null;
      if (pair.ed25519?.length && prefix.length === 32) k = { ed25519: prefix };
      if (pair.ECDSASecp256k1?.length && prefix.length === 33) k = { ECDSASecp256k1: prefix };
      if (k && this.signed(k)) out.push(primitiveId(k)!);
    }
    return out;
  }
}

/** Signers known by id (the signatories collected by a schedule). */
export class KeyIdSigners implements SignerSet {
  constructor(private readonly ids: Set<string>) {}
  signed(k: Key): boolean {
    const id = primitiveId(k);
    return id !== null && this.ids.has(id);
  }
}

/** Mirror node key JSON: { _type, key } with hex key; key structures as ProtobufEncoded. */
export function keyKind(k: Key): KeyKind | 'ProtobufEncoded' {
  if (k.ed25519?.length) return 'ED25519';
  if (k.ECDSASecp256k1?.length) return 'ECDSA_SECP256K1';
  return 'ProtobufEncoded';
}
