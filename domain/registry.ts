/**
 * Registry api keys (SPEC 2 "Registry api key", 3, 4.6; DESIGN.md sections 6 and 10): the key
 * format, the registration record as served, the caps' time arithmetic and the directory topic
 * message of a sponsored registration. Pure: no I/O (the random bytes come from the caller).
 */

/** KEY_PREFIX of SPEC 2 (DESIGN.md section 6). A key is `apk_` + 43 base64url characters (32 bytes). */
export const KEY_PREFIX = 'apk';
export const API_KEY_PATTERN = /^apk_[A-Za-z0-9_-]{43}$/;
/** Characters of the key shown in the record (key_prefix): `apk_` and the first 8 of the secret part. */
export const KEY_PREFIX_SHOWN = 12;

export const REGISTRY_LIMITS = {
  nameMin: 1,
  nameMax: 64,
  /** the per-IP cap's rolling window */
  ipWindowMs: 24 * 60 * 60 * 1000,
} as const;

/** The api key made of 32 random bytes. */
export function apiKeyOf(random32: Uint8Array): string {
  if (random32.length !== 32) throw new Error('an api key is made of 32 random bytes');
  return `${KEY_PREFIX}_${Buffer.from(random32).toString('base64url')}`;
}

export function isApiKey(value: string): boolean {
  return API_KEY_PATTERN.test(value);
}

/** What the record shows of a key (never enough to use it). */
export function keyPrefixOf(key: string): string {
  return key.slice(0, KEY_PREFIX_SHOWN);
}

/** Whether a Bearer token claims to be a registry key (it then must be one: never the anonymous quota). */
export function looksLikeApiKey(token: string): boolean {
  return token.startsWith(`${KEY_PREFIX}_`);
}

/** The UTC day of an instant, as YYYY-MM-DD (the sponsored budget's unit). */
export function utcDay(at: Date): string {
  return at.toISOString().slice(0, 10);
}

/** The next UTC midnight after an instant (when the sponsored budget resets). */
export function nextUtcMidnight(at: Date): Date {
  return new Date(Date.UTC(at.getUTCFullYear(), at.getUTCMonth(), at.getUTCDate() + 1));
}

/** Whole seconds from `now` to `until`, at least 1 (Retry-After). */
export function retryAfterSeconds(now: Date, until: Date): number {
  return Math.max(1, Math.ceil((until.getTime() - now.getTime()) / 1000));
}

export type RegistryKeyStatus = 'active' | 'revoked';
export type DirectoryRecordStatus = 'pending' | 'written' | 'failed';

/** The registration record (DESIGN.md section 10), as POST register, GET and DELETE /me answer it. */
export interface RegistryRecord {
  id: string;
  name: string;
  owner: string | null;
  sponsored: boolean;
  status: RegistryKeyStatus;
  created_at: string;
  revoked_at: string | null;
  key_prefix: string;
  /** sponsored registrations only: the directory topic record the service pays for */
  directory_record?: { status: DirectoryRecordStatus; sequence_number: number | null; transaction_id: string | null };
}

/**
 * The directory topic message of a sponsored registration: the on-ledger record paid by the
 * service (DESIGN.md section 10). Public fields only, never the key or its hash. The directory
 * rebuild reads agent.registered messages only, so this type does not disturb the agent directory.
 */
export interface RegistrySponsoredMessage {
  v: 1;
  type: 'registry.sponsored';
  id: string;
  name: string;
  owner: string;
  /** registration time, Unix milliseconds */
  timestamp: number;
}

export function sponsoredMessage(input: { id: string; name: string; owner: string; createdAt: number }): RegistrySponsoredMessage {
  return { v: 1, type: 'registry.sponsored', id: input.id, name: input.name, owner: input.owner, timestamp: input.createdAt };
}
