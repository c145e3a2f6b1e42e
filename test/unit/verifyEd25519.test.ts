// ED25519 by Node's crypto gives the SDK's answers: verification passes valid signatures and fails a
// changed message, signature or key (malformed input is false, not an exception); signing makes the
// SDK's very bytes.
import { describe, expect, it } from 'vitest';
import { AccountId, PrivateKey, Timestamp, TransactionId, TransferTransaction } from '@hashgraph/sdk';
import { keyTypeOf, signBytes, signTransaction, verifyEd25519, verifySignature } from '@agent-passport/core/keys';

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

describe('signBytes and signTransaction', () => {
  it('make the signatures the SDK makes, for ED25519 and ECDSA keys', async () => {
    for (const key of [PrivateKey.generateED25519(), PrivateKey.generateECDSA(), PrivateKey.generateED25519()]) {
      const message = Buffer.from(`transaction body ${key.publicKey.toStringRaw()}`);
      const sig = signBytes(key, message);
      expect(key.publicKey.verify(message, sig)).toBe(true);
      // Ed25519 is deterministic: the very same bytes as tweetnacl's
      if (keyTypeOf(key) === 'ED25519') expect(Buffer.from(sig).toString('hex')).toBe(Buffer.from(key.sign(message)).toString('hex'));

      const build = () =>
        new TransferTransaction()
          .addHbarTransfer('0.0.1001', -1)
          .addHbarTransfer('0.0.1002', 1)
          .setTransactionId(TransactionId.withValidStart(AccountId.fromString('0.0.1001'), new Timestamp(1_700_000_000, 7)))
          .setNodeAccountIds([AccountId.fromString('0.0.3')])
          .freeze();
      const ours = await signTransaction(build(), key);
      const sdks = await build().sign(key);
      expect(key.publicKey.verifyTransaction(ours)).toBe(true);
      // deterministic signatures (Ed25519; RFC 6979 for the SDK's ECDSA): the same signed bytes
      expect(Buffer.from(ours.toBytes()).equals(Buffer.from(sdks.toBytes()))).toBe(true);
    }
  });
});
