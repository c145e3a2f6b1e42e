/** How passports are shown (JSON, links, explorer link) and how their path ids are validated. */
import type { z } from 'zod';
import { ApiError, echo } from '../errors.js';
import type { passportSchema } from '../schemas/passports.js';
import type { PassportRow } from '../../db/queries/passports.js';
import type { PassportRefusal } from '../../domain/tiers.js';
import { isEntityId } from '@agent-passport/core/did';

/**
 * Explorer link of a passport NFT: HashScan on public networks; on localnet (which HashScan cannot
 * show) the API's own passport page, GET {base}/passport/{tokenId}/{serial}.
 */
export function hashScanLink(network: string, base: string, tokenId: string, serial: number): string {
  if (network === 'local') return `${base}/passport/${tokenId}/${serial}`;
  return `https://hashscan.io/${network}/token/${tokenId}/${serial}`;
}

export function passportLinks(tokenId: string, serial: number, did: string, owner: string) {
  return {
    self: { href: `/passport/${tokenId}/${serial}` },
    owner: { href: `/passport/address/${owner}` },
    did: { href: `/did/${did}` },
    audit: { href: `/audit/${tokenId}/${serial}` },
    upgrade: { href: `/passport/${tokenId}/${serial}/upgrade`, method: 'POST' as const },
  };
}

export function passportJson(row: PassportRow, network: string, base: string): z.infer<typeof passportSchema> {
  const serial = Number(row.serial);
  const out: z.infer<typeof passportSchema> = {
    active: row.revoked_at === null,
    tokenId: row.token_id,
    serialNumber: serial,
    tier: row.tier,
    capabilities: row.capabilities,
    did: row.did,
    owner: row.account_id,
    issuedAt: row.issued_at.getTime(),
    hashScanLink: hashScanLink(network, base, row.token_id, serial),
    _links: passportLinks(row.token_id, serial, row.did, row.account_id),
  };
  if (row.endpoint) out.endpoint = row.endpoint;
  if (row.revoked_at) out.revokedAt = row.revoked_at.getTime();
  return out;
}

const SERIAL = /^[1-9]\d{0,15}$/;

/** Validates path ids; 400 invalid_request otherwise. */
export function parsePassportIds(tokenId: unknown, serial: unknown): { tokenId: string; serial: number } {
  const t = String(tokenId ?? '');
  const s = String(serial ?? '');
  if (!isEntityId(t)) throw new ApiError('invalid_request', `tokenId ${echo(t)} is not a token id`, { hint: 'tokenId: expected shard.realm.num, e.g. 0.0.1234' });
  if (!SERIAL.test(s) || !Number.isSafeInteger(Number(s))) throw new ApiError('invalid_request', `serial ${echo(s)} is not a serial number`, { hint: 'serial: expected a positive integer' });
  return { tokenId: t, serial: Number(s) };
}

export function notFound(tokenId: string, serial: number | string): ApiError {
  return new ApiError('passport_not_found', `No active passport ${tokenId}/${serial}`, { hint: `Check tokenId ${tokenId} and serial ${serial}, or request a new passport with POST /passport/request` });
}

/** Throws the ApiError of a passport request's refusal (domain/tiers.ts), if there is one. */
export function refusePassport(r: PassportRefusal | null): void {
  if (r) throw new ApiError(r.code, r.message, { hint: r.hint });
}
