// Signed A2A agent cards (issue 29 item 5; A2A v1.0 section 8.4): a card signed by the DID's account
// key verifies, over the whole card (members outside the AgentCard schema included, like `did`) or
// over the @a2a-js/sdk schema form; ED25519 (EdDSA) and ECDSA secp256k1 (ES256K) account keys; a
// card signed by another key, a tampered card, an unsigned card and one naming another DID do not.
import { createPrivateKey, createPublicKey, generateKeyPairSync, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import canonicalize from 'canonicalize';
import { base64url, FlattenedSign } from 'jose';
import { generateAgentCardSignature, verifyAgentCardSignature } from '@a2a-js/sdk';
import { PrivateKey } from '@hashgraph/sdk';
import { cardPayloads, verifyAgentCard, type CardKey } from '../../domain/agentCardSignature.js';
import { cardDid } from '../../domain/directory.js';

const did = 'did:hedera:local:0.0.4242';

const card = {
  did,
  name: 'Weather agent',
  description: 'Forecasts',
  version: '1.0.0',
  supportedInterfaces: [{ url: 'https://weather.example/a2a', protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
  capabilities: { streaming: false },
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['application/json'],
  skills: [{ id: 'forecast', name: 'Forecast', description: 'Tomorrow', tags: ['weather'] }],
};

function ed25519(): { privateKey: KeyObject; key: CardKey } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  const der = publicKey.export({ format: 'der', type: 'spki' });
  return { privateKey, key: { type: 'ED25519', raw: der.subarray(der.length - 32) } };
}

/** A Hedera ECDSA account key, as the mirror gives it (33-byte compressed), with its private key for node:crypto. */
function secp256k1(): { privateKey: KeyObject; key: CardKey } {
  const hedera = PrivateKey.generateECDSA();
  const pkcs8 = Buffer.concat([Buffer.from('302e0201010420', 'hex'), Buffer.from(hedera.toBytesRaw()), Buffer.from('a00706052b8104000a', 'hex')]);
  const privateKey = createPrivateKey({ key: pkcs8, format: 'der', type: 'sec1' });
  return { privateKey, key: { type: 'ECDSA', raw: hedera.publicKey.toBytesRaw() } };
}

/** Signs `payload` as a detached flattened JWS (EdDSA with jose; ES256K by hand, as jose 6 has no secp256k1). */
async function jws(payload: string, privateKey: KeyObject, alg: 'EdDSA' | 'ES256K', kid = `${did}#key-1`) {
  if (alg === 'EdDSA') {
    const s = await new FlattenedSign(new TextEncoder().encode(payload)).setProtectedHeader({ alg, typ: 'JOSE', kid }).sign(privateKey);
    return { protected: s.protected!, signature: s.signature };
  }
  const protectedHeader = base64url.encode(JSON.stringify({ alg, typ: 'JOSE', kid }));
  const input = `${protectedHeader}.${base64url.encode(payload)}`;
  const signature = cryptoSign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' });
  return { protected: protectedHeader, signature: base64url.encode(signature) };
}

const wholePayload = (c: Record<string, unknown>) => canonicalize(c)!;

describe('agent card signatures (A2A v1.0 section 8.4) against the DID account key', () => {
  for (const [type, make, alg] of [
    ['ED25519', ed25519, 'EdDSA'],
    ['ECDSA secp256k1', secp256k1, 'ES256K'],
  ] as const) {
    it(`${type}: a card signed over the whole card (its "did" included) verifies; tampered, or signed by another key, it does not`, async () => {
      const { privateKey, key } = make();
      const signed = { ...card, signatures: [await jws(wholePayload(card), privateKey, alg)] };
      expect(await verifyAgentCard(signed, did, cardDid(signed), key)).toEqual({ cardVerified: true, cardVerification: 'verified' });
      // `did` is outside the AgentCard schema: a signature over the whole card covers it
      const otherDid = { ...signed, did: 'did:hedera:local:0.0.999' };
      expect(await verifyAgentCard(otherDid, did, cardDid(otherDid), key)).toEqual({ cardVerified: false, cardVerification: 'did_mismatch' });
      const renamed = { ...signed, name: 'Evil agent' };
      expect(await verifyAgentCard(renamed, did, cardDid(renamed), key)).toEqual({ cardVerified: false, cardVerification: 'signature_invalid' });
      const other = make();
      expect(await verifyAgentCard(signed, did, did, other.key)).toEqual({ cardVerified: false, cardVerification: 'signature_invalid' });
    });
  }

  it('a card signed by the @a2a-js/sdk reference signer (schema form: `did` not covered) verifies too, and the SDK verifier accepts it', async () => {
    const { privateKey, key } = ed25519();
    const signed = await generateAgentCardSignature(privateKey, { alg: 'EdDSA', typ: 'JOSE', kid: `${did}#key-1` })(card as never);
    expect(cardPayloads(signed as never)).toHaveLength(2); // the whole card (with `did`) and the schema form differ
    expect(await verifyAgentCard(signed, did, did, key)).toEqual({ cardVerified: true, cardVerification: 'verified' });
    await expect(verifyAgentCardSignature(async () => createPublicKey(privateKey))(signed)).resolves.toBeUndefined();
    const tampered = { ...signed, skills: [{ ...card.skills[0]!, description: 'Yesterday' }] };
    expect(await verifyAgentCard(tampered, did, did, key)).toEqual({ cardVerified: false, cardVerification: 'signature_invalid' });
  });

  it('says why a card is not verified: unsigned, no account key, an algorithm that does not match the key, not an object', async () => {
    const { privateKey, key } = ed25519();
    expect(await verifyAgentCard(card, did, did, key)).toEqual({ cardVerified: false, cardVerification: 'unsigned' });
    const signed = { ...card, signatures: [await jws(wholePayload(card), privateKey, 'EdDSA')] };
    expect(await verifyAgentCard(signed, did, did, null)).toEqual({ cardVerified: false, cardVerification: 'no_account_key' });
    const ecdsa = secp256k1();
    expect(await verifyAgentCard(signed, did, did, ecdsa.key)).toEqual({ cardVerified: false, cardVerification: 'unsupported_algorithm' });
    expect(await verifyAgentCard([signed], did, did, key)).toEqual({ cardVerified: false, cardVerification: 'card_invalid' });
    const noKid = { ...card, signatures: [{ protected: base64url.encode(JSON.stringify({ alg: 'EdDSA' })), signature: signed.signatures[0]!.signature }] };
    expect(await verifyAgentCard(noKid, did, did, key)).toEqual({ cardVerified: false, cardVerification: 'unsupported_algorithm' });
  });
});
