/**
 * W3C DID document (DID Core 1.0) for a ledger DID backed by a passport: the account key as the
 * verification method (Ed25519VerificationKey2020 with publicKeyMultibase, or
 * EcdsaSecp256k1VerificationKey2019 with a compressed publicKeyMultibase), used for authentication
 * and assertions, and services pointing at the agent's endpoint, its A2A card (with whether the card
 * is signed by this key: cardVerified, cardVerification) and its passport.
 */
import { base58btc } from './base58.js';

export interface DidDocumentInput {
  did: string;
  keyType: 'ED25519' | 'ECDSA';
  /** Raw public key: 32 bytes (ED25519) or 33-byte compressed point (ECDSA secp256k1). */
  publicKeyRaw: Uint8Array;
  passportUrl: string;
  endpoint?: string;
  tokenId: string;
  serialNumber: number;
  tier: string;
  /** the A2A card the agent's directory entry names, and whether it is signed by this DID's key (issue 29 item 5) */
  agentCard?: { url: string; cardVerified: boolean; cardVerification: string };
}

// Multicodec prefixes (varint) for multibase public keys.
const ED25519_PUB = [0xed, 0x01];
const SECP256K1_PUB = [0xe7, 0x01];

export function buildDidDocument(input: DidDocumentInput) {
  const keyId = `${input.did}#key-1`;
  const ed = input.keyType === 'ED25519';
  const multicodec = Uint8Array.from([...(ed ? ED25519_PUB : SECP256K1_PUB), ...input.publicKeyRaw]);
  const service: Array<{ id: string; type: string; serviceEndpoint: string; cardVerified?: boolean; cardVerification?: string }> = [
    { id: `${input.did}#passport`, type: 'AgentPassport', serviceEndpoint: input.passportUrl },
  ];
  if (input.agentCard) {
    const { url, cardVerified, cardVerification } = input.agentCard;
    service.unshift({ id: `${input.did}#agent-card`, type: 'A2AAgentCard', serviceEndpoint: url, cardVerified, cardVerification });
  }
  if (input.endpoint) service.unshift({ id: `${input.did}#agent`, type: 'AgentService', serviceEndpoint: input.endpoint });
  return {
    '@context': [
      'https://www.w3.org/ns/did/v1',
      ed ? 'https://w3id.org/security/suites/ed25519-2020/v1' : 'https://w3id.org/security/suites/secp256k1-2019/v1',
    ],
    id: input.did,
    controller: input.did,
    verificationMethod: [
      {
        id: keyId,
        type: ed ? 'Ed25519VerificationKey2020' : 'EcdsaSecp256k1VerificationKey2019',
        controller: input.did,
        publicKeyMultibase: `z${base58btc(multicodec)}`,
      },
    ],
    authentication: [keyId],
    assertionMethod: [keyId],
    service,
    passport: { tokenId: input.tokenId, serialNumber: input.serialNumber, tier: input.tier },
  };
}

export type DidDocument = ReturnType<typeof buildDidDocument>;
