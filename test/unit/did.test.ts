import { describe, expect, it } from 'vitest';
import { hederaDid, parseHederaDid, parsePkhDid } from '@agent-passport/core/did';
import { decodePassportMetadata, encodePassportMetadata } from '../../domain/passportMetadata.js';
import { buildDidDocument } from '../../domain/didDocument.js';
import { base58btc } from '../../domain/base58.js';
import { TIER_CATALOG } from '../../domain/tiers.js';

describe('DIDs', () => {
  it('parses did:hedera:{network}:{accountId}', () => {
    expect(parseHederaDid('did:hedera:testnet:0.0.4521')).toEqual({ method: 'hedera', network: 'testnet', accountId: '0.0.4521', did: 'did:hedera:testnet:0.0.4521' });
    expect(hederaDid('local', '0.0.1001')).toBe('did:hedera:local:0.0.1001');
  });
  it.each(['did:hedera:moon:0.0.1', 'did:hedera:testnet:0.0', 'did:web:example.com', 'did:hedera:testnet:00.0.1', 'did:hedera:testnet:0.0.1 '])('refuses %s', (d) => {
    expect(parseHederaDid(d)).toBeNull();
  });
  it('parses did:pkh:eip155 DIDs', () => {
    expect(parsePkhDid('did:pkh:eip155:31337:0x' + 'ab'.repeat(20))?.chainId).toBe(31337);
    expect(parsePkhDid('did:pkh:eip155:1:0x12')).toBeNull();
  });
});

describe('passport NFT metadata', () => {
  it.each(TIER_CATALOG.map((t) => [t.name, t.capabilities] as const))('round-trips %s within 100 bytes', (tier, caps) => {
    const bytes = encodePassportMetadata({ tier, capabilities: [...caps] });
    expect(bytes.length).toBeLessThanOrEqual(100);
    const decoded = decodePassportMetadata(bytes)!;
    expect(decoded.tier).toBe(tier);
    expect(new Set(decoded.capabilities)).toEqual(new Set(caps));
  });
  it('refuses foreign metadata', () => {
    expect(decodePassportMetadata(new TextEncoder().encode('ipfs://bafy...'))).toBeNull();
  });
});

describe('DID documents', () => {
  it('encodes base58btc like the reference vectors', () => {
    expect(base58btc(new TextEncoder().encode('Hello World!'))).toBe('2NEpo7TZRRrLZSi2U');
    expect(base58btc(Uint8Array.from([0, 0, 1]))).toBe('112');
  });
  it('builds a W3C document with the key, authentication and services', () => {
    const doc = buildDidDocument({
      did: 'did:hedera:local:0.0.1001',
      keyType: 'ED25519',
      publicKeyRaw: new Uint8Array(32).fill(7),
      passportUrl: 'http://localhost:3000/passport/0.0.500/1',
      endpoint: 'https://agent.example/a2a',
      tokenId: '0.0.500',
      serialNumber: 1,
      tier: 'gold',
    });
    expect(doc['@context'][0]).toBe('https://www.w3.org/ns/did/v1');
    expect(doc.id).toBe('did:hedera:local:0.0.1001');
    expect(doc.verificationMethod[0].type).toBe('Ed25519VerificationKey2020');
    expect(doc.verificationMethod[0].publicKeyMultibase.startsWith('z6Mk')).toBe(true); // ed25519 multikey prefix
    expect(doc.authentication).toEqual(['did:hedera:local:0.0.1001#key-1']);
    expect(doc.service.map((s) => s.type)).toEqual(['AgentService', 'AgentPassport']);
  });
  it("names the agent's A2A card among the services, with whether its signature is by this DID's key (issue 29 item 5)", () => {
    const doc = buildDidDocument({
      did: 'did:hedera:local:0.0.1001',
      keyType: 'ECDSA',
      publicKeyRaw: Uint8Array.from([2, ...new Uint8Array(32).fill(9)]),
      passportUrl: 'http://localhost:3000/passport/0.0.500/1',
      endpoint: 'https://agent.example/a2a',
      tokenId: '0.0.500',
      serialNumber: 1,
      tier: 'gold',
      agentCard: { url: 'https://agent.example/.well-known/agent-card.json', cardVerified: false, cardVerification: 'signature_invalid' },
    });
    expect(doc.service).toEqual([
      { id: 'did:hedera:local:0.0.1001#agent', type: 'AgentService', serviceEndpoint: 'https://agent.example/a2a' },
      { id: 'did:hedera:local:0.0.1001#agent-card', type: 'A2AAgentCard', serviceEndpoint: 'https://agent.example/.well-known/agent-card.json', cardVerified: false, cardVerification: 'signature_invalid' },
      { id: 'did:hedera:local:0.0.1001#passport', type: 'AgentPassport', serviceEndpoint: 'http://localhost:3000/passport/0.0.500/1' },
    ]);
  });
});
