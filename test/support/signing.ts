/** Client side of DID signature authentication, as an agent would do it. */
import type { FastifyInstance } from 'fastify';
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
