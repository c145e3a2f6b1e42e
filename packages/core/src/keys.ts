// Key handling: parse private keys in the formats agents hand us, rebuild public keys from the mirror
// node's key JSON, and verify signatures with either ED25519 or ECDSA secp256k1 keys.
// Private keys only live in memory here; nothing in this module logs or stores them. Shared by the
// service and the client (the client signs sign-in challenges, payments and topic messages with it).
import { createPrivateKey, createPublicKey, sign as cryptoSign, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import { PrivateKey, PublicKey, type Transaction } from '@hashgraph/sdk';

export type KeyType = 'ED25519' | 'ECDSA';

export { PrivateKey, PublicKey };

const HEX = /^[0-9a-fA-F]+$/;

/**
 * A key or signature that could not be parsed. It carries what the service's LedgerError carries
 * (status INVALID_KEY, not retryable, phase input, a hint), and ledger/errors.ts toLedgerError maps
 * it to that LedgerError, so the service sees the same failure as before this module was shared.
 */
export class KeyError extends Error {
  override readonly name = 'KeyError';
  readonly status = 'INVALID_KEY';
  readonly retryable = false;
  readonly phase = 'input';
  readonly hint = 'pass a DER-hex ED25519/ECDSA key or a 0x-hex ECDSA key';
}

function invalidKey(message: string): KeyError {
  // never echo the key material itself
  return new KeyError(message);
}

/**
 * Parses a private key:
 * - DER hex (302e... ED25519, 3030.../3053... ECDSA secp256k1), the format of .data/localnet.json;
 * - 0x-prefixed 32-byte hex: ECDSA secp256k1 (the EVM-style export of Hedera portals and wallets);
 * - bare 32-byte hex: ED25519 unless `type` says ECDSA.
 */
export function parsePrivateKey(text: string, type?: KeyType): PrivateKey {
  if (typeof text !== 'string' || text.trim() === '') throw invalidKey('private key is empty');
  let s = text.trim();
  const has0x = s.startsWith('0x') || s.startsWith('0X');
  if (has0x) s = s.slice(2);
  if (!HEX.test(s)) throw invalidKey('private key is not hex');
  try {
    if (s.length === 64) {
      if (has0x || type === 'ECDSA') return PrivateKey.fromStringECDSA(s);
      return PrivateKey.fromStringED25519(s);
    }
    if (type === 'ECDSA') return PrivateKey.fromStringECDSA(s);
    if (type === 'ED25519') return PrivateKey.fromStringED25519(s);
    return PrivateKey.fromStringDer(s);
  } catch {
    throw invalidKey('private key could not be parsed');
  }
}

export function keyTypeOf(key: PrivateKey | PublicKey): KeyType {
  return key.type === 'secp256k1' || /ecdsa/i.test(key.type) ? 'ECDSA' : 'ED25519';
}

/** Parses a public key given as DER hex, or raw hex with a type. */
export function parsePublicKey(text: string, type?: KeyType): PublicKey {
  let s = text.trim();
  if (s.startsWith('0x') || s.startsWith('0X')) s = s.slice(2);
  if (!HEX.test(s)) throw invalidKey('public key is not hex');
  try {
    if (type === 'ECDSA' || (type === undefined && s.length === 66)) return PublicKey.fromStringECDSA(s);
    if (type === 'ED25519' || (type === undefined && s.length === 64)) return PublicKey.fromStringED25519(s);
    return PublicKey.fromString(s);
  } catch {
    throw invalidKey('public key could not be parsed');
  }
}

/** The mirror node's key JSON: `{ "_type": "ED25519" | "ECDSA_SECP256K1" | "ProtobufEncoded", "key": "<hex>" }`. */
export interface MirrorKey {
  _type: string;
  key: string;
}

/**
 * Rebuilds a single public key from the mirror's key JSON. Returns null for key lists / threshold
 * keys (ProtobufEncoded) and for accounts without a key: callers treat those as "cannot verify".
 */
export function publicKeyFromMirror(key: MirrorKey | null | undefined): PublicKey | null {
  if (!key || typeof key.key !== 'string' || key.key === '') return null;
  try {
    switch (key._type) {
      case 'ED25519':
        return PublicKey.fromStringED25519(stripDerPrefix(key.key, 'ED25519'));
      case 'ECDSA_SECP256K1':
        return PublicKey.fromStringECDSA(stripDerPrefix(key.key, 'ECDSA'));
      default:
        return null;
    }
  } catch {
    return null;
  }
}

// Some mirror deployments return DER-encoded keys; the SDK's typed parsers accept both forms, but a
// raw key is the common case. Kept as a hook for normalisation.
function stripDerPrefix(hex: string, _type: KeyType): string {
  return hex.startsWith('0x') ? hex.slice(2) : hex;
}

function toBytes(data: Uint8Array | string, encoding: 'hex' | 'utf8'): Uint8Array {
  if (typeof data !== 'string') return data;
  if (encoding === 'hex') {
    const s = data.startsWith('0x') ? data.slice(2) : data;
    if (!HEX.test(s) || s.length % 2 !== 0) throw invalidKey('signature is not hex');
    return Uint8Array.from(Buffer.from(s, 'hex'));
  }
  return new TextEncoder().encode(data);
}

/**
 * Verifies a signature over bytes. ED25519 signs the message itself; ECDSA secp256k1 signs keccak256
 * of the message (the SDK handles both). `message` strings are UTF-8; `signature` strings are hex.
 */
export function verifySignature(publicKey: PublicKey, message: Uint8Array | string, signature: Uint8Array | string): boolean {
  try {
    const msg = toBytes(message, 'utf8');
    const sig = toBytes(signature, 'hex');
    if (keyTypeOf(publicKey) === 'ED25519') return verifyEd25519(publicKey.toBytesRaw(), msg, sig);
    return publicKey.verify(msg, sig);
  } catch {
    return false;
  }
}

/** DER SubjectPublicKeyInfo header of an Ed25519 key (RFC 8410), followed by the 32 raw bytes. */
const ED25519_SPKI_HEADER = Buffer.from('302a300506032b6570032100', 'hex');
const ed25519KeyObjects = new Map<string, KeyObject>();
const MAX_CACHED_KEYS = 10_000;

/**
 * ED25519 verification by Node's OpenSSL (about 0.1 ms) instead of the SDK's pure-JS tweetnacl (about
 * 11 ms measured here, blocking the event loop for each signed request or ledger transaction).
 */
export function verifyEd25519(rawPublicKey: Uint8Array, message: Uint8Array, signature: Uint8Array): boolean {
  if (rawPublicKey.length !== 32 || signature.length !== 64) return false;
  const id = Buffer.from(rawPublicKey).toString('hex');
  let key = ed25519KeyObjects.get(id);
  try {
    if (!key) {
      key = createPublicKey({ key: Buffer.concat([ED25519_SPKI_HEADER, rawPublicKey]), format: 'der', type: 'spki' });
      if (ed25519KeyObjects.size >= MAX_CACHED_KEYS) ed25519KeyObjects.clear();
      ed25519KeyObjects.set(id, key);
    }
    return cryptoVerify(null, message, key, signature);
  } catch {
    return false;
  }
}

/** Signs bytes (UTF-8 for strings); returns the raw signature. */
export function signBytes(privateKey: PrivateKey, message: Uint8Array | string): Uint8Array {
  const bytes = toBytes(message, 'utf8');
  if (keyTypeOf(privateKey) !== 'ED25519') return privateKey.sign(bytes);
  return new Uint8Array(cryptoSign(null, bytes, ed25519PrivateKeyObject(privateKey)));
}

/** The signer the SDK's signWith / setOperatorWith take, signing as signBytes does. */
export function transactionSigner(privateKey: PrivateKey): (message: Uint8Array) => Promise<Uint8Array> {
  return (message) => Promise.resolve(signBytes(privateKey, message));
}

/**
 * `tx.sign(privateKey)` with signBytes: the same signature bytes (Ed25519 is deterministic), made by
 * OpenSSL in about 0.1 ms instead of tweetnacl's 7 ms for ED25519 keys.
 */
export function signTransaction<T extends Transaction>(tx: T, privateKey: PrivateKey): Promise<T> {
  return tx.signWith(privateKey.publicKey, transactionSigner(privateKey));
}

/** DER PKCS#8 header of an Ed25519 private key (RFC 8410), followed by the 32-byte seed. */
const ED25519_PKCS8_HEADER = Buffer.from('302e020100300506032b657004220420', 'hex');
/** In memory only, per key object, gone with it. */
const ed25519PrivateKeyObjects = new WeakMap<PrivateKey, KeyObject>();

function ed25519PrivateKeyObject(privateKey: PrivateKey): KeyObject {
  let key = ed25519PrivateKeyObjects.get(privateKey);
  if (!key) {
    key = createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_HEADER, privateKey.toBytesRaw()]), format: 'der', type: 'pkcs8' });
    ed25519PrivateKeyObjects.set(privateKey, key);
  }
  return key;
}

export function publicKeyToDerHex(key: PublicKey): string {
  return key.toStringDer();
}
