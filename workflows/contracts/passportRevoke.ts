/** Contract of passportRevoke (workflows/passportRevoke.ts): started by POST /admin/revoke (api/routes/admin.ts). */
import type { PassportWorkflowTimings } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** passport-revoke:{tokenId}:{serial} */
export function passportRevokeWorkflowId(tokenId: string, serial: number): string {
  return `passport-revoke:${tokenId}:${serial}`;
}

export interface PassportRevokeInput extends Bound {
  tokenId: string;
  serial: number;
  accountId: string;
  did: string;
  reason?: string;
  timings?: PassportWorkflowTimings;
}

export interface PassportRevokeResult {
  status: 'revoked';
  tokenId: string;
  serialNumber: number;
  did: string;
  reason: string | null;
  revokedAt: number;
  wipeTransactionId: string | null;
  wipedFrom: string;
  auditTransactionId: string;
}

export const passportRevokeContract = workflowContract<PassportRevokeInput, PassportRevokeResult>()({
  type: 'passportRevoke',
  workflowId: passportRevokeWorkflowId,
});
