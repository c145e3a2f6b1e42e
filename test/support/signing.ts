/** Client side of DID signature authentication, as an agent would do it. */
import type { FastifyInstance } from 'fastify';
import { parsePrivateKey, signBytes } from '../../ledger/keys.js';

export interface TestAgent {
  accountId: string;
  did: string;
  keyType: 'ED25519' | 'ECDSA';
  privateKey: string;
}

export function signChallenge(agent: TestAgent, challenge: string): string {
  return Buffer.from(signBytes(parsePrivateKey(agent.privateKey, agent.keyType), challenge)).toString('hex');
}

/** Fetches a challenge and returns the three signature headers. */
export async function signedHeaders(app: FastifyInstance, agent: TestAgent): Promise<Record<string, string>> {
  const res = await app.inject({ url: `/auth/challenge?did=${encodeURIComponent(agent.did)}` });
  if (res.statusCode !== 200) throw new Error(`challenge: ${res.statusCode} ${res.body}`);
  const { challenge } = res.json() as { challenge: string };
  return {
    'x-service-did': agent.did,
    'x-service-challenge': challenge, // one line of printable ASCII: sent raw
    'x-service-signature': signChallenge(agent, challenge),
  };
}
