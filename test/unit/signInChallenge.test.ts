// The sign-in challenge form (packages/core/src/signInChallenge.ts; issue 19 item 6): what the API writes, what
// a client agrees to sign, and that no challenge parses as a Hedera protobuf message.
import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { proto } from '../../localnet/proto.js';
import { CHALLENGE_CLOCK_SKEW_MS, challengeProblem, formatChallenge, originOf, parseChallenge } from '@agent-passport/core/signInChallenge';

const did = 'did:hedera:testnet:0.0.1234';
const origin = 'https://passport.example';
const now = Date.parse('2030-01-01T00:00:00.000Z');
const expiresAt = new Date(now + 300_000);
const nonce = '0123456789abcdef0123456789abcdef';
const challenge = formatChallenge({ origin, did, nonce, expiresAt });

describe('sign-in challenges', () => {
  it('are one line of the documented form, naming origin, purpose, DID, nonce and expiry', () => {
    expect(challenge).toBe(`For https://passport.example only; purpose agent-passport sign-in; did ${did}; nonce ${nonce}; expires 2030-01-01T00:05:00.000Z`);
    expect(parseChallenge(challenge)).toEqual({ origin, did, nonce, expiresAt });
  });

  it('a client signs one for its own DID and the origin it called, before it expires', () => {
    expect(challengeProblem(challenge, { did, origin, now })).toBeNull();
    expect(challengeProblem(challenge, { did, origin: originOf('https://PASSPORT.example:443/api/')!, now })).toBeNull();
    expect(challengeProblem(challenge, { did: 'did:hedera:testnet:0.0.99', origin, now })).toMatch(/names did:hedera:testnet:0.0.1234, not the signer/);
    expect(challengeProblem(challenge, { did, origin: 'https://passport.example.evil', now })).toMatch(/is for https:\/\/passport.example, not for/);
    expect(challengeProblem(challenge, { did, origin: 'http://passport.example', now })).toMatch(/not for/);
    expect(challengeProblem(challenge, { did, origin, now: expiresAt.getTime() + CHALLENGE_CLOCK_SKEW_MS })).toMatch(/expired/);
  });

  it('refuses to sign any other text', () => {
    const others = [
      '',
      'x',
      `agent-passport wants you to sign in as ${did}; nonce ${nonce}; expires 2030-01-01T00:05:00.000Z`, // the old form
      `${challenge}\n`,
      `${challenge} `,
      challenge.replace('sign-in', 'payment'),
      challenge.replace(nonce, nonce.toUpperCase()),
      challenge.replace('https://passport.example', 'https://passport.example/'),
      challenge.replace('https://passport.example', 'https://PASSPORT.example'),
      challenge.replace('https://passport.example', 'javascript:alert(1)'),
      challenge.replace('2030-01-01T00:05:00.000Z', '2030-02-30T00:05:00.000Z'),
      challenge.replace(did, 'did:web:example.com'),
      challenge.replace('example', 'exämple'),
      Buffer.from(proto.TransactionBody.encode({ memo: 'x' }).finish()).toString('latin1'),
      `${challenge}${'a'.repeat(600)}`,
    ];
    for (const text of others) expect(challengeProblem(text, { did, origin, now }), JSON.stringify(text)).toMatch(/not of the documented form/);
  });

  it('never decode as a transaction a node would take: no transaction id, node or fee; no (signed) transaction at all', () => {
    for (let i = 0; i < 500; i++) {
      const text = formatChallenge({ origin: `https://h${i}.example:${1000 + i}`, did: `did:hedera:mainnet:0.0.${randomBytes(4).readUInt32BE()}`, nonce: randomBytes(16).toString('hex'), expiresAt: new Date(now + i * 1000) });
      const bytes = Buffer.from(text, 'utf8');
      // the tags of TransactionBody fields 1-3 (bytes 0x08-0x1f) and every multi-byte tag (a byte >= 0x80) are outside printable ASCII
      expect(bytes.every((b) => b >= 0x20 && b <= 0x7e)).toBe(true);
      let body: ReturnType<typeof proto.TransactionBody.decode> | null = null;
      try {
        body = proto.TransactionBody.decode(bytes);
      } catch {
        // not even a message
      }
      if (body) expect([body.transactionID, body.nodeAccountID, Number(body.transactionFee ?? 0)], text).toEqual([null, null, 0]);
      for (const message of [proto.SignedTransaction, proto.Transaction]) expect(() => message.decode(bytes), text).toThrow(/invalid wire type 6/);
    }
  });
});
