/**
 * Keys of a party's Hedera account for the routes that take a private key in the body (market
 * -with-key steps and the poster's key, A2A send-with-key) or check a client's signature against
 * the account (market direct payments, A2A send-signed): the account's one public key from the
 * mirror (through ctx.ledger.keys, cached), and a body key checked to be exactly that key.
 *
 * A key from a body is parsed here and returned to the caller to sign in memory; it is never
 * logged, stored or quoted in an error message.
 */
import type { AccountKeyResolver } from './accountKeys.js';
import { ApiError } from '../errors.js';
import { parsePrivateKey, type PrivateKey, type PublicKey } from '@agent-passport/core/keys';

/**
 * The account's single public key. 503 service_unavailable when the mirror cannot be read;
 * 401 auth_did_unresolved when the account does not exist or has no single ED25519/ECDSA key.
 * `role` names the party in messages ("poster", "sender").
 */
export async function accountPublicKey(keys: AccountKeyResolver, accountId: string, role: string): Promise<PublicKey> {
  let key: PublicKey | null;
  try {
    key = await keys.resolve(accountId);
  } catch {
    throw new ApiError('service_unavailable', `The ledger mirror is unavailable, so the ${role} key cannot be read`, { hint: 'Retry after 30 seconds' });
  }
  if (!key) throw new ApiError('auth_did_unresolved', `The key of ${accountId} cannot be read (no single ED25519/ECDSA key)`, { hint: `The ${role} account must have one ED25519 or ECDSA key` });
  return key;
}

/**
 * The private key sent in body field `field`, checked to be the key of the party's account:
 * 400 invalid_request when it cannot be parsed, 403 auth_did_mismatch when it is another key
 * (plus accountPublicKey's 401/503).
 */
export async function requireOwnPrivateKey(
  keys: AccountKeyResolver,
  party: { did: string; accountId: string },
  keyText: string,
  field: string,
  role: string,
): Promise<PrivateKey> {
  let key: PrivateKey;
  try {
    key = parsePrivateKey(keyText);
  } catch {
    throw new ApiError('invalid_request', `${field} could not be parsed`, { hint: 'Send the key as DER hex (ED25519 or ECDSA) or 0x-prefixed 32-byte hex (ECDSA)' });
  }
  const accountKey = await accountPublicKey(keys, party.accountId, role);
  if (key.publicKey.toStringRaw() !== accountKey.toStringRaw()) {
    throw new ApiError('auth_did_mismatch', `${field} is not the key of ${party.did}`, { hint: `Send the private key of ${party.accountId}` });
  }
  return key;
}
