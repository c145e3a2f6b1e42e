/**
 * Admin authentication: `Authorization: Bearer <admin token>`. The server holds only the token's
 * sha256 (ADMIN_TOKEN_SHA256) and compares digests in constant time. No token: 401; wrong: 403.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';
import { sha256Hex } from '../../domain/hash.js';

export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

/** Whether the request carries the admin token (constant-time digest comparison); false when none is configured. */
export function hasAdminToken(request: FastifyRequest, adminTokenSha256: string | undefined): boolean {
  const token = bearerToken(request);
  if (!token || !adminTokenSha256) return false;
  return timingSafeEqual(Buffer.from(sha256Hex(token), 'hex'), Buffer.from(adminTokenSha256.toLowerCase(), 'hex'));
}

/** Throws the admin error for a request that does not carry the admin token: 401 without one, 403 with a wrong one. */
export function refuseNonAdmin(request: FastifyRequest): never {
  if (!bearerToken(request)) throw new ApiError('admin_auth_required', 'Admin token required', { hint: 'Send Authorization: Bearer <admin token>' });
  throw new ApiError('admin_auth_invalid', 'Admin token is not valid', { hint: 'Use the token whose sha256 is ADMIN_TOKEN_SHA256' });
}

export function requireAdmin(adminTokenSha256: string | undefined) {
  return async function adminGuard(request: FastifyRequest): Promise<void> {
    if (!hasAdminToken(request, adminTokenSha256)) refuseNonAdmin(request);
  };
}
