/**
 * Signed A2A agent cards (A2A v1.0 section 8.4; issue 29 item 5; docs/decisions.md "A2A cards and
 * liveness"). Pure: no I/O (the caller fetches the card and resolves the account key).
 *
 * What a signature covers: a JWS (RFC 7515, flattened, detached payload) whose payload is the RFC 8785
 * canonical JSON of the card without its `signatures` member. Two readings of "the card" are in use,
 * and a signature over either verifies:
 *   - `whole`: every member the card carries (section 8.4.1 read literally; what most signers do, and
 *     the only form that covers members outside the AgentCard schema, such as `did`);
 *   - `schema`: the card reduced to the v1.0 AgentCard schema with protobuf defaults and empty values
 *     dropped, as the @a2a-js/sdk reference signer and verifier compute it (canonicalizeAgentCard).
 * The service's own card has no member outside the schema and no empty value, so both forms are the
 * same bytes there.
 *
 * Keys: an agent's card is verified against its DID's account key (the DID document's #key-1):
 * ED25519 as JWS alg EdDSA (RFC 8037), ECDSA secp256k1 as ES256K (RFC 8812: ECDSA over SHA-256,
 * the 64-byte r||s form). A key list or threshold key cannot sign a card.
 */
import { createPublicKey, verify as cryptoVerify, type KeyObject } from 'node:crypto';
import canonicalize from 'canonicalize';
import { base64url, flattenedVerify } from 'jose';
import { canonicalizeAgentCard, type AgentCard } from '@a2a-js/sdk';

/** One entry of a card's `signatures` (A2A v1.0 AgentCardSignature). */
export interface AgentCardSignature {
  protected: string;
  signature: string;
  header?: Record<string, unknown>;
}

/** Why a card is, or is not, verified (the directory entry's cardVerification). */
export const CARD_VERIFICATION_REASONS = {
  verified: 'a signature of the card verifies with the account key of the agent\'s DID',
  no_card: 'the entry names no agent card',
  not_checked: 'the card has not been checked yet (the next probe checks it)',
  card_unreachable: 'the agent card could not be fetched (no answer, not 2xx, or over 64 KB)',
  card_invalid: 'the agent card is not a JSON object',
  did_mismatch: 'the agent card names another DID',
  unsigned: 'the agent card carries no signatures',
  no_account_key: 'the DID\'s account has no single ED25519 or ECDSA key to verify with',
  unsupported_algorithm: 'no signature uses EdDSA (ED25519 account) or ES256K (ECDSA account) with a kid',
  signature_invalid: 'no signature of the card verifies with the account key of the agent\'s DID',
} as const;

export type CardVerificationReason = keyof typeof CARD_VERIFICATION_REASONS;

export interface CardVerification {
  cardVerified: boolean;
  cardVerification: CardVerificationReason;
}

/** An account's public key: 32 raw bytes (ED25519) or the 33-byte compressed point (ECDSA secp256k1). */
export interface CardKey {
  type: 'ED25519' | 'ECDSA';
  raw: Uint8Array;
}

/** Signatures looked at per card (a card is at most 64 KB; this bounds the work of a hostile one). */
const SIGNATURES_MAX = 8;

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function canonical(value: unknown): string {
  const text = canonicalize(value);
  if (text === undefined) throw new Error('value has no canonical JSON form');
  return text;
}

/** The RFC 8785 canonical JSON of the whole card without `signatures` (what the service signs its own card over). */
export function cardSigningPayload(card: Record<string, unknown>): string {
  const { signatures: _ignored, ...rest } = card;
  return canonical(rest);
}

/** The payloads a signature of the card may cover: the whole card, then the schema form (when it differs). */
export function cardPayloads(card: Record<string, unknown>): string[] {
  const whole = cardSigningPayload(card);
  let schema: string | undefined;
  try {
    schema = canonicalizeAgentCard(card as unknown as AgentCard);
  } catch {
    schema = undefined; // members of the wrong type for the schema: only the whole card can have been signed
  }
  return schema === undefined || schema === whole ? [whole] : [whole, schema];
}

const ED25519_SPKI = Buffer.from('302a300506032b6570032100', 'hex');
/** SubjectPublicKeyInfo header of a compressed secp256k1 point (id-ecPublicKey, secp256k1). */
const SECP256K1_SPKI = Buffer.from('3036301006072a8648ce3d020106052b8104000a032200', 'hex');

function keyObjectOf(key: CardKey): KeyObject {
  const der = Buffer.concat([key.type === 'ED25519' ? ED25519_SPKI : SECP256K1_SPKI, Buffer.from(key.raw)]);
  return createPublicKey({ key: der, format: 'der', type: 'spki' });
}

function protectedHeaderOf(sig: AgentCardSignature): Record<string, unknown> | null {
  try {
    const header: unknown = JSON.parse(new TextDecoder().decode(base64url.decode(sig.protected)));
    return isObject(header) ? header : null;
  } catch {
    return null;
  }
}

const ALGS: Record<CardKey['type'], readonly string[]> = { ED25519: ['EdDSA', 'Ed25519'], ECDSA: ['ES256K'] };

/** One signature over one payload: EdDSA through jose, ES256K (which jose 6 dropped) through node:crypto. */
async function signatureVerifies(sig: AgentCardSignature, alg: string, payload: string, key: KeyObject): Promise<boolean> {
  const encoded = base64url.encode(new TextEncoder().encode(payload));
  if (alg !== 'ES256K') {
    try {
      await flattenedVerify({ payload: encoded, protected: sig.protected, signature: sig.signature, ...(sig.header ? { header: sig.header } : {}) }, key, { algorithms: [alg] });
      return true;
    } catch {
      return false;
    }
  }
  try {
    const input = Buffer.from(`${sig.protected}.${encoded}`, 'ascii');
    return cryptoVerify('sha256', input, { key, dsaEncoding: 'ieee-p1363' }, Buffer.from(base64url.decode(sig.signature)));
  } catch {
    return false;
  }
}

function signaturesOf(card: Record<string, unknown>): AgentCardSignature[] {
  const list = card.signatures;
  if (!Array.isArray(list)) return [];
  return list
    .filter((s): s is AgentCardSignature => isObject(s) && typeof s.protected === 'string' && typeof s.signature === 'string' && (s.header === undefined || isObject(s.header)))
    .slice(0, SIGNATURES_MAX);
}

/**
 * Verifies a fetched card for `did` with the DID's account key (null when the account has no single
 * key). The card must name no DID or this one (`namedDid`, read by the caller: domain/directory.ts
 * cardDid); at least one signature (alg matching the key type, a kid, no `crit` this verifier does not
 * know) must verify over one of the card's payloads.
 */
export async function verifyAgentCard(card: unknown, did: string, namedDid: string | null, key: CardKey | null): Promise<CardVerification> {
  const no = (cardVerification: CardVerificationReason): CardVerification => ({ cardVerified: false, cardVerification });
  if (!isObject(card)) return no('card_invalid');
  if (namedDid && namedDid !== did) return no('did_mismatch');
  const signatures = signaturesOf(card);
  if (signatures.length === 0) return no('unsigned');
  if (!key) return no('no_account_key');
  let keyObject: KeyObject;
  try {
    keyObject = keyObjectOf(key);
  } catch {
    return no('no_account_key');
  }
  const payloads = cardPayloads(card);
  let usable = false;
  for (const sig of signatures) {
    const header = protectedHeaderOf(sig);
    const alg = header?.alg;
    if (!header || typeof alg !== 'string' || !ALGS[key.type].includes(alg) || typeof header.kid !== 'string' || header.crit !== undefined) continue;
    usable = true;
    for (const payload of payloads) {
      if (await signatureVerifies(sig, alg, payload, keyObject)) return { cardVerified: true, cardVerification: 'verified' };
    }
  }
  return no(usable ? 'signature_invalid' : 'unsupported_algorithm');
}
