/**
 * Admin authentication: `Authorization: Bearer <admin token>`. The server holds only the token's
 * sha256 (ADMIN_TOKEN_SHA256) and compares digests in constant time. No token: 401; wrong: 403.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import { ApiError } from '../errors.js';

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value, 'utf8').digest('hex');
}

export function bearerToken(request: FastifyRequest): string | undefined {
  const header = request.headers.authorization;
  if (!header) return undefined;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return match?.[1];
}

export function requireAdmin(adminTokenSha256: string | undefined) {
  const expected = adminTokenSha256 ? Buffer.from(adminTokenSha256.toLowerCase(), 'hex') : undefined;
  return async function adminGuard(request: FastifyRequest): Promise<void> {
    const token = bearerToken(request);
    if (!token) throw new ApiError('admin_auth_required', 'Admin token required');
    const actual = Buffer.from(sha256Hex(token), 'hex');
    if (!expected || !timingSafeEqual(actual, expected)) throw new ApiError('admin_auth_invalid', 'Admin token is not valid');
  };
}
