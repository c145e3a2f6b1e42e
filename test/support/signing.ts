/** Client side of DID signature authentication, as an agent would do it. */
import { createPrivateKey, sign as cryptoSign } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import canonicalize from 'canonicalize';
import { base64url, FlattenedSign } from 'jose';
import { parsePrivateKey, signBytes } from '@agent-passport/core/keys';
import { challengeProblem } from '@agent-passport/core/signInChallenge';

export interface TestAgent {
  accountId: string;
  did: string;
  keyType: 'ED25519' | 'ECDSA';
  privateKey: string;
}

/** The key's signature over any text, as hex (tests that sign something on purpose use this directly). */
export function signChallenge(agent: TestAgent, challenge: string): string {
  return Buffer.from(signBytes(parsePrivateKey(agent.privateKey, agent.keyType), challenge)).toString('hex');
}

/** The origin app.inject sends requests to (Host: localhost:80), which a challenge names without PUBLIC_BASE_URL. */
export const INJECT_ORIGIN = 'http://localhost';

/**
 * Fetches a challenge and returns the three signature headers. Like every client (packages/client
 * signInHeaders), it signs only a challenge of the documented form for the agent's DID, naming the
 * expected origin (the app's PUBLIC_BASE_URL when it has one, else what app.inject calls) and not
 * expired; anything else throws.
 */
export async function signedHeaders(app: FastifyInstance, agent: TestAgent, opts: { origin?: string } = {}): Promise<Record<string, string>> {
  const res = await app.inject({ url: `/auth/challenge?did=${encodeURIComponent(agent.did)}` });
  if (res.statusCode !== 200) throw new Error(`challenge: ${res.statusCode} ${res.body}`);
  const { challenge } = res.json() as { challenge: string };
  const problem = challengeProblem(challenge, { did: agent.did, origin: opts.origin ?? INJECT_ORIGIN, now: Date.now() });
  if (problem) throw new Error(`refusing to sign the server's challenge: ${problem}`);
  return {
    'x-service-did': agent.did,
    'x-service-challenge': challenge, // one line of printable ASCII: sent raw
    'x-service-signature': signChallenge(agent, challenge),
  };
}

/**
 * The agent's A2A card signed by its account key as section 8.4 describes (a detached flattened JWS
 * over the RFC 8785 form of the whole card without `signatures`): EdDSA for an ED25519 account,
 * ES256K (ECDSA secp256k1 over SHA-256) for an ECDSA one; kid {did}#key-1.
 */
export async function signAgentCardAs(agent: TestAgent, card: Record<string, unknown>): Promise<Record<string, unknown>> {
  const raw = Buffer.from(parsePrivateKey(agent.privateKey, agent.keyType).toBytesRaw());
  const payload = canonicalize(card)!;
  const kid = `${agent.did}#key-1`;
  let signature: { protected: string; signature: string };
  if (agent.keyType === 'ED25519') {
    const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e020100300506032b657004220420', 'hex'), raw]), format: 'der', type: 'pkcs8' });
    const s = await new FlattenedSign(new TextEncoder().encode(payload)).setProtectedHeader({ alg: 'EdDSA', typ: 'JOSE', kid }).sign(key);
    signature = { protected: s.protected!, signature: s.signature };
  } else {
    // SEC 1 ECPrivateKey of a secp256k1 scalar (jose 6 has no ES256K: node:crypto signs)
    const key = createPrivateKey({ key: Buffer.concat([Buffer.from('302e0201010420', 'hex'), raw, Buffer.from('a00706052b8104000a', 'hex')]), format: 'der', type: 'sec1' });
    const header = base64url.encode(JSON.stringify({ alg: 'ES256K', typ: 'JOSE', kid }));
    const sig = cryptoSign('sha256', Buffer.from(`${header}.${base64url.encode(payload)}`), { key, dsaEncoding: 'ieee-p1363' });
    signature = { protected: header, signature: base64url.encode(sig) };
  }
  return { ...card, signatures: [signature] };
}
