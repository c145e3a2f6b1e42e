/**
 * An agent talking to one API base URL over real HTTP, as a client does: sign-in over
 * GET /auth/challenge, x402 payment with @x402/fetch in localnet HBAR, and 202 request_pending
 * answers followed by polling until the effect shows (a busy machine may take longer than the API's
 * bounded wait, which SPEC allows).
 */
import { createPayingFetch } from '@agent-passport/core/x402/clientScheme';
import type { LocalnetConfig } from '../../localnet/index.js';
import { challengeProblem } from '@agent-passport/core/signInChallenge';
import { signChallenge, type TestAgent } from '../support/signing.js';

export type Json = Record<string, any>;
export interface Answer {
  status: number;
  body: Json;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class AgentHttp {
  constructor(
    readonly base: string,
    readonly agent: TestAgent,
    readonly node: LocalnetConfig['node'],
    /**
     * the service's public origin (its PUBLIC_BASE_URL): as a client does, only a challenge of the
     * documented form naming it is signed. Unset: anything is signed (an older version's challenges)
     */
    readonly origin?: string,
  ) {}

  async get(path: string, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(`${this.base}${path}`, { headers });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  }

  async post(path: string, body: unknown, headers: Record<string, string> = {}): Promise<Answer> {
    const res = await fetch(`${this.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  }

  async signIn(): Promise<Record<string, string>> {
    const r = await this.get(`/auth/challenge?did=${encodeURIComponent(this.agent.did)}`);
    if (r.status !== 200) throw new Error(`challenge: ${r.status} ${JSON.stringify(r.body)}`);
    const challenge = String(r.body.challenge);
    const problem = this.origin ? challengeProblem(challenge, { did: this.agent.did, origin: this.origin, now: Date.now() }) : null;
    if (problem) throw new Error(`refusing to sign the challenge ${JSON.stringify(challenge)}: ${problem}`);
    return { 'x-service-did': this.agent.did, 'x-service-challenge': challenge, 'x-service-signature': signChallenge(this.agent, challenge) };
  }

  async signedPost(path: string, body: unknown): Promise<Answer> {
    return this.post(path, body, await this.signIn());
  }

  /** signed, and paid over x402 when the route asks for it (402) */
  async paidPost(path: string, body: unknown, maxHbar = 600n): Promise<Answer> {
    const headers = await this.signIn();
    const paying = createPayingFetch({
      accountId: this.agent.accountId,
      privateKey: this.agent.privateKey,
      keyType: this.agent.keyType,
      node: this.node,
      maxAmountTinybars: maxHbar * 100_000_000n,
      networks: ['local'],
    });
    const res = await paying(`${this.base}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: JSON.stringify(body) });
    const text = await res.text();
    return { status: res.status, body: text ? (JSON.parse(text) as Json) : {} };
  }
}

/** Polls `look` until it returns a value (not undefined), for up to timeoutMs. */
export async function until<T>(what: string, look: () => Promise<T | undefined>, timeoutMs = 180_000): Promise<T> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = await look().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(300);
  }
}

/** A 200 as is; a 202 request_pending followed by `settled` until it shows the effect. */
export async function settled(a: Answer, what: string, settledBy: () => Promise<Json | undefined>): Promise<Json> {
  if (a.status === 200 || a.status === 201) return a.body;
  if (a.status !== 202) throw new Error(`${what}: ${a.status} ${JSON.stringify(a.body)}`);
  return until(what, settledBy);
}
