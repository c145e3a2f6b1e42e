/**
 * passportRevoke (id passport-revoke:{tokenId}:{serial}), started by POST /admin/revoke:
 *
 *   setPassportFrozen(false) (unfreeze the holder: Hedera refuses to wipe a frozen relationship)
 *   -> wipePassport (from the owner) -> publishAudit (passport.revoked, reason) -> markRevoked
 *
 * A wipe that fails for good fails the workflow (nothing was charged); the API answers 502.
 * Idempotency keys carry the run id, so an admin retry after a failed run tries a new wipe.
 */
import { patched, workflowInfo } from '@temporalio/workflow';
import { passportActivities } from './passportCommon.js';
import type { PassportRevokeInput, PassportRevokeResult } from './contracts/passportRevoke.js';
import { requireBoundStart } from './binding.js';

export async function passportRevoke(input: PassportRevokeInput): Promise<PassportRevokeResult> {
  requireBoundStart(input, 'passportRevoke'); // an input written for another workflow starts nothing (issue 26)
  const { steps, durable } = passportActivities(input.timings);
  const info = workflowInfo();
  const keyBase = `${info.workflowId}/${info.runId}`;
  if (patched('passport-revoke-unfreeze')) {
    // a holder still frozen makes the wipe fail with ACCOUNT_FROZEN_FOR_TOKEN (the revoke then fails as today)
    await steps.setPassportFrozen({ idempotencyKey: `${keyBase}/unfreeze`, tokenId: input.tokenId, accountId: input.accountId, serial: input.serial, frozen: false });
  }
  const wiped = await steps.wipePassport({ idempotencyKey: `${keyBase}/wipe`, tokenId: input.tokenId, serial: input.serial, accountId: input.accountId });
  const revokedAt = Date.now();
  const reason = input.reason ?? null;
  const audit = await durable.publishAudit({
    idempotencyKey: `${keyBase}/audit`,
    event: {
      v: 1,
      type: 'passport.revoked',
      did: input.did,
      tokenId: input.tokenId,
      serial: input.serial,
      timestamp: revokedAt,
      ...(reason ? { reason } : {}),
    },
  });
  await durable.markRevoked({ tokenId: input.tokenId, serial: input.serial, reason, revokedAtMs: revokedAt });
  return {
    status: 'revoked',
    tokenId: input.tokenId,
    serialNumber: input.serial,
    did: input.did,
    reason,
    revokedAt,
    wipeTransactionId: wiped.transactionId,
    wipedFrom: wiped.wipedFrom,
    auditTransactionId: audit.transactionId,
  };
}
