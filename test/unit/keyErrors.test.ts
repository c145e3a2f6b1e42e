// A key that cannot be parsed fails the same way for the service as it did before key handling moved
// into @agent-passport/core: through toLedgerError it is a LedgerError INVALID_KEY, not retryable,
// phase input, with a hint, and its message never echoes the key.
import { describe, expect, it } from 'vitest';
import { KeyError, parsePrivateKey, parsePublicKey } from '@agent-passport/core/keys';
import { LedgerError, toLedgerError } from '../../ledger/errors.js';

function thrown(f: () => unknown): unknown {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error('did not throw');
}

describe('key parse failures', () => {
  for (const [what, f] of [
    ['a private key that is not hex', () => parsePrivateKey('not-a-key-zz')],
    ['an empty private key', () => parsePrivateKey('  ')],
    ['a private key of the wrong length', () => parsePrivateKey('abcd', 'ECDSA')],
    ['a public key that is not hex', () => parsePublicKey('xyz')],
  ] as const) {
    it(`${what} maps to LedgerError INVALID_KEY`, () => {
      const err = thrown(f);
      expect(err).toBeInstanceOf(KeyError);
      const le = toLedgerError(err);
      expect(le).toBeInstanceOf(LedgerError);
      expect(le).toMatchObject({ status: 'INVALID_KEY', retryable: false, phase: 'input', hint: expect.stringContaining('DER-hex') });
      expect(le.message).not.toContain('not-a-key-zz');
    });
  }
});
