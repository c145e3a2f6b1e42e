/** Client side of DID signature authentication, as an agent would do it. */
import type { FastifyInstance } from 'fastify';
import { PrivateKey } from '@hashgraph/sdk';

export interface TestAgent {
  accountId: string;
  did: string;
  keyType: 'ED25519' | 'ECDSA';
  privateKey: string;
}

export function signChallenge(agent: TestAgent, challenge: string): string {
  const key = agent.keyType === 'ECDSA' ? PrivateKey.fromStringECDSA(agent.privateKey) : PrivateKey.fromStringDer(agent.privateKey);
  return Buffer.from(key.sign(new TextEncoder().encode(challenge))).toString('hex');
}

/** Fetches a challenge and returns the three signature headers. */
export async function signedHeaders(app: FastifyInstance, agent: TestAgent): Promise<Record<string, string>> {
  const res = await app.inject({ url: `/auth/challenge?did=${encodeURIComponent(agent.did)}` });
  if (res.statusCode !== 200) throw new Error(`challenge: ${res.statusCode} ${res.body}`);
  const { challenge } = res.json() as { challenge: string };
  return {
    'x-service-did': agent.did,
    'x-service-challenge': encodeURIComponent(challenge),
    'x-service-signature': signChallenge(agent, challenge),
  };
}
