// ED25519 verification by Node's crypto gives the SDK's answer: valid signatures pass, a changed
// message, signature or key fails, malformed input is false rather than an exception.
import { describe, expect, it } from 'vitest';
import { PrivateKey } from '@hashgraph/sdk';
import { verifyEd25519, verifySignature } from '../../ledger/keys.js';

describe('verifyEd25519', () => {
  it('agrees with the SDK on signatures made by the SDK', () => {
    for (let i = 0; i < 20; i++) {
      const key = PrivateKey.generateED25519();
      const other = PrivateKey.generateED25519();
      const message = Buffer.from(`body bytes ${i} `.repeat(i + 1));
      const sig = key.sign(message);
      const flipped = Uint8Array.from(sig);
      flipped[i % 64]! ^= 1;
      const cases: [Uint8Array, Uint8Array, Uint8Array][] = [
        [key.publicKey.toBytesRaw(), message, sig],
        [key.publicKey.toBytesRaw(), Buffer.concat([message, Buffer.from('x')]), sig],
        [key.publicKey.toBytesRaw(), message, flipped],
        [other.publicKey.toBytesRaw(), message, sig],
      ];
      const answers = cases.map(([pub, m, s]) => verifyEd25519(pub, m, s));
      expect(answers).toEqual([true, false, false, false]);
      expect(cases.map(([, m, s], j) => (j === 3 ? other : key).publicKey.verify(m, s))).toEqual(answers);
    }
  });

  it('answers false for keys and signatures of the wrong length', () => {
    const key = PrivateKey.generateED25519();
    const sig = key.sign(Buffer.from('m'));
    expect(verifyEd25519(key.publicKey.toBytesRaw().subarray(1), Buffer.from('m'), sig)).toBe(false);
    expect(verifyEd25519(key.publicKey.toBytesRaw(), Buffer.from('m'), sig.subarray(1))).toBe(false);
    expect(verifyEd25519(new Uint8Array(32), Buffer.from('m'), sig)).toBe(false);
  });

  it('is what verifySignature uses for ED25519 keys; ECDSA keys still verify', () => {
    const ed = PrivateKey.generateED25519();
    const ec = PrivateKey.generateECDSA();
    for (const k of [ed, ec]) {
      const sig = Buffer.from(k.sign(Buffer.from('challenge'))).toString('hex');
      expect(verifySignature(k.publicKey, 'challenge', sig)).toBe(true);
      expect(verifySignature(k.publicKey, 'challengf', sig)).toBe(false);
    }
  });
});
