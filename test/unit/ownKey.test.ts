/**
 * The one helper for a private key sent in a body (market -with-key steps, the poster's key,
 * A2A send-with-key) and for an account's public key (market direct payments, A2A send-signed),
 * and the one sha256 helper: no other source file defines its own.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { PrivateKey } from '@hashgraph/sdk';
import { describe, expect, it } from 'vitest';
import { accountPublicKey, requireOwnPrivateKey } from '../../api/auth/ownKey.js';
import type { AccountKeyResolver } from '../../api/auth/accountKeys.js';
import { ApiError } from '../../api/errors.js';
import { sha256Hex } from '../../domain/hash.js';

const own = PrivateKey.generateED25519();
const ecdsa = PrivateKey.generateECDSA();
const party = { did: 'did:hedera:local:0.0.1001', accountId: '0.0.1001' };
/** an account-key table standing in for the mirror (the resolver is an interface of this service) */
const keysOf = (table: Record<string, PrivateKey | 'down'>): AccountKeyResolver => ({
  async resolve(accountId) {
    const k = table[accountId];
    if (k === 'down') throw new Error('mirror down');
    return k ? k.publicKey : null;
  },
});

async function refusal(p: Promise<unknown>): Promise<{ code: string; status: number; message: string }> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(ApiError);
  const { code, status, message } = err as ApiError;
  return { code, status, message };
}

describe('requireOwnPrivateKey / accountPublicKey', () => {
  it('answers the parsed key when it is the account key (ED25519 DER, ECDSA 0x hex)', async () => {
    const key = await requireOwnPrivateKey(keysOf({ '0.0.1001': own }), party, own.toStringDer(), 'posterPrivateKey', 'poster');
    expect(key.publicKey.toStringRaw()).toBe(own.publicKey.toStringRaw());
    const e = await requireOwnPrivateKey(keysOf({ '0.0.1001': ecdsa }), party, `0x${ecdsa.toStringRaw()}`, 'senderPrivateKey', 'sender');
    expect(e.publicKey.toStringRaw()).toBe(ecdsa.publicKey.toStringRaw());
  });

  it('400 unparsable, 403 another key, 401 no single key, 503 mirror down; the key text is never quoted', async () => {
    const other = PrivateKey.generateED25519();
    const bad = await refusal(requireOwnPrivateKey(keysOf({ '0.0.1001': own }), party, 'not-a-key', 'claimerPrivateKey', 'claimer'));
    expect(bad).toMatchObject({ code: 'invalid_request', status: 400 });
    expect(bad.message).toContain('claimerPrivateKey');
    const mismatch = await refusal(requireOwnPrivateKey(keysOf({ '0.0.1001': own }), party, other.toStringDer(), 'posterPrivateKey', 'poster'));
    expect(mismatch).toMatchObject({ code: 'auth_did_mismatch', status: 403 });
    expect(mismatch.message).not.toContain(other.toStringDer());
    expect(await refusal(requireOwnPrivateKey(keysOf({}), party, own.toStringDer(), 'posterPrivateKey', 'poster'))).toMatchObject({ code: 'auth_did_unresolved', status: 401 });
    expect(await refusal(requireOwnPrivateKey(keysOf({ '0.0.1001': 'down' }), party, own.toStringDer(), 'posterPrivateKey', 'poster'))).toMatchObject({ code: 'service_unavailable', status: 503 });
    expect(await refusal(accountPublicKey(keysOf({}), '0.0.1001', 'sender'))).toMatchObject({ code: 'auth_did_unresolved' });
    expect((await accountPublicKey(keysOf({ '0.0.1001': own }), '0.0.1001', 'sender')).toStringRaw()).toBe(own.publicKey.toStringRaw());
  });
});

describe('one sha256 helper', () => {
  it('hashes strings as UTF-8 and bytes as they are', () => {
    expect(sha256Hex('')).toBe('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    expect(sha256Hex('é')).toBe(sha256Hex(Buffer.from('é', 'utf8')));
  });

  it('no other source file defines a sha256 helper or its own private-key check', () => {
    const root = new URL('../../', import.meta.url);
    const offenders: string[] = [];
    for (const dir of ['api/', 'domain/', 'ledger/', 'activities/', 'workflows/', 'db/', 'net/', 'packages/core/src/']) {
      for (const name of readdirSync(new URL(dir, root), { recursive: true }) as string[]) {
        if (!name.endsWith('.ts')) continue;
        const file = `${dir}${name}`;
        const source = readFileSync(new URL(file, root), 'utf8');
        if (file !== 'domain/hash.ts' && /(?:function\s+sha256\w*\s*\(|const\s+sha256\w*\s*=\s*\()/.test(source)) offenders.push(`${file}: sha256 helper`);
        if (file !== 'api/auth/ownKey.ts' && /parsePrivateKey\([^)]*\)[\s\S]{0,400}keys\.resolve\(/.test(source)) offenders.push(`${file}: private key check`);
      }
    }
    expect(offenders).toEqual([]);
  });
});
