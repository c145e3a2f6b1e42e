/**
 * The Ed25519 key that signs trust snapshots (DESIGN.md section 10 "Trust snapshots").
 *
 * TRUST_SIGNING_KEY (PKCS#8 PEM, or PKCS#8 DER as hex) with TRUST_SIGNING_KEY_ID; both required in
 * production (config/index.ts). Without them (dev without the launcher, tests) a key is generated
 * in memory for the life of the process, its id derived from the public key.
 *
 * What is signed: the 32 raw bytes of the snapshot hash (the sha256 digest whose lower-case hex is
 * integrity.snapshot_hash), with Ed25519 (RFC 8032, pure, no pre-hash). integrity.signature is the
 * 64-byte signature in lower-case hex; integrity.public_key the 32-byte raw public key in lower-case
 * hex (the same bytes as the JWK "x" of the signature directory, there in base64url).
 */
import { createHash, createPrivateKey, createPublicKey, generateKeyPairSync, sign, verify, type KeyObject } from 'node:crypto';
import { FlattenedSign, type JWSHeaderParameters } from 'jose';
import type { Config } from '../../config/index.js';

export interface TrustSigner {
  keyId: string;
  /** raw 32-byte public key, lower-case hex */
  publicKeyHex: string;
  publicKey: KeyObject;
  /** whether the key was generated for this process (no TRUST_SIGNING_KEY) */
  ephemeral: boolean;
  /** Ed25519 signature (hex) of the 32 bytes of a sha256 hex digest */
  signHash(hashHex: string): string;
  /**
   * A flattened JWS (alg EdDSA) over `payload`, detached: its protected header and signature only
   * (the service's A2A card, section 8.4, under the same key and kid as the snapshots).
   */
  signJws(payload: Uint8Array, protectedHeader: Omit<JWSHeaderParameters, 'alg'>): Promise<{ protected: string; signature: string }>;
}

function privateKeyFrom(text: string): KeyObject {
  return text.includes('-----BEGIN') ? createPrivateKey(text) : createPrivateKey({ key: Buffer.from(text, 'hex'), format: 'der', type: 'pkcs8' });
}

/** The raw 32 public-key bytes of an Ed25519 key (the tail of its SPKI DER). */
function rawPublicKey(publicKey: KeyObject): Buffer {
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return der.subarray(der.length - 32);
}

function hashBytes(hashHex: string): Buffer {
  if (!/^[0-9a-f]{64}$/.test(hashHex)) throw new Error('not a lower-case sha256 hex digest');
  return Buffer.from(hashHex, 'hex');
}

export function makeTrustSigner(config: Pick<Config, 'TRUST_SIGNING_KEY' | 'TRUST_SIGNING_KEY_ID'>): TrustSigner {
  const privateKey = config.TRUST_SIGNING_KEY ? privateKeyFrom(config.TRUST_SIGNING_KEY) : generateKeyPairSync('ed25519').privateKey;
  if (privateKey.asymmetricKeyType !== 'ed25519') throw new Error('TRUST_SIGNING_KEY is not an Ed25519 key');
  const publicKey = createPublicKey(privateKey);
  const raw = rawPublicKey(publicKey);
  const keyId = config.TRUST_SIGNING_KEY_ID ?? `trust-${createHash('sha256').update(raw).digest('hex').slice(0, 16)}`;
  return {
    keyId,
    publicKeyHex: raw.toString('hex'),
    publicKey,
    ephemeral: !config.TRUST_SIGNING_KEY,
    signHash: (hashHex) => sign(null, hashBytes(hashHex), privateKey).toString('hex'),
    async signJws(payload, protectedHeader) {
      const jws = await new FlattenedSign(payload).setProtectedHeader({ ...protectedHeader, alg: 'EdDSA' }).sign(privateKey);
      return { protected: jws.protected!, signature: jws.signature };
    },
  };
}

/** Checks a snapshot signature (hex) over a hash (hex) with a raw public key (hex). */
export function verifySnapshotSignature(hashHex: string, signatureHex: string, publicKeyHex: string): boolean {
  const spki = Buffer.concat([Buffer.from('302a300506032b6570032100', 'hex'), Buffer.from(publicKeyHex, 'hex')]);
  const key = createPublicKey({ key: spki, format: 'der', type: 'spki' });
  return verify(null, hashBytes(hashHex), key, Buffer.from(signatureHex, 'hex'));
}
