/**
 * A passport run acts only on its own claim (issue 26 item 2; DESIGN 12 "Money integrity II"). The
 * claim row (passport_issuances / passport_upgrades) was written by the API with the verified payment
 * and names the workflow that may act on it; what is minted, delivered or rewritten (tier,
 * capabilities, owner, passport) comes from that row, never from the workflow's input. So a copied
 * passportIssuance input started under another workflow id mints nothing, and the steps that sign
 * with the service's keys check the row themselves, whoever scheduled them.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { tierEntry, type Tier } from '../domain/tiers.js';
import type { Capability } from '../domain/capabilities.js';
import { findPassport, findRequestClaim } from '../db/queries/passports.js';

/** The failure type of a run acting on a claim that is not its own (final). */
export const NOT_OWN_CLAIM = 'NotOwnClaim';

/** What a passport run may do, from its claim row. */
export type RunClaim =
  | { kind: 'issuance'; network: string; accountId: string; did: string; tier: Tier; capabilities: Capability[]; endpoint: string | null }
  | { kind: 'upgrade'; tokenId: string; serial: number; accountId: string; did: string; oldTier: Tier; newTier: Tier; capabilities: Capability[] };

function refused(message: string): never {
  throw ApplicationFailure.create({ type: NOT_OWN_CLAIM, message, nonRetryable: true });
}

function callerWorkflow(): { workflowId: string; runId: string } {
  const exec = Context.current().info.workflowExecution;
  if (!exec) refused('a passport step runs only inside its workflow');
  return exec;
}

/** The claim of this payment, which must name the calling workflow; with its terms. */
export async function ownClaim(sql: Sql, paymentTransactionId: string): Promise<{ claim: RunClaim; status: string; ledgerWritesRunId: string | null }> {
  const { workflowId } = callerWorkflow();
  const found = await findRequestClaim(sql, paymentTransactionId);
  if (!found) refused(`payment ${paymentTransactionId} pays for no request`);
  if (found.row.workflow_id !== workflowId) refused(`payment ${paymentTransactionId} pays for a request of another workflow, not ${workflowId}`);
  if (found.kind === 'issuance') {
    const r = found.row;
    return {
      claim: { kind: 'issuance', network: r.network, accountId: r.account_id, did: r.did, tier: r.tier as Tier, capabilities: r.capabilities as Capability[], endpoint: r.endpoint },
      status: r.status,
      ledgerWritesRunId: r.ledger_writes_run_id,
    };
  }
  const r = found.row;
  const passport = await findPassport(sql, r.token_id, r.serial);
  if (!passport) refused(`payment ${paymentTransactionId} upgrades passport ${r.token_id}/${r.serial}, which is not recorded`);
  return {
    claim: {
      kind: 'upgrade',
      tokenId: r.token_id,
      serial: Number(r.serial),
      accountId: r.account_id,
      did: passport.did,
      oldTier: r.old_tier as Tier,
      newTier: r.new_tier as Tier,
      capabilities: [...tierEntry(r.new_tier as Tier).capabilities],
    },
    status: r.status,
    ledgerWritesRunId: r.ledger_writes_run_id,
  };
}

/**
 * Before a passport step signs (mint, delivery, metadata update): its idempotency key is the calling
 * workflow's own (`{workflowId}/{payment}/{step}`), the payment's claim names this workflow, the claim
 * was taken to the ledger by this run (or already ended with its passport: the key then finds the
 * earlier write), and what is signed matches the claim (`matches` says how).
 */
export async function requireOwnClaimFor(sql: Sql, idempotencyKey: string, matches: (claim: RunClaim) => string | null): Promise<RunClaim> {
  const { workflowId, runId } = callerWorkflow();
  const prefix = `${workflowId}/`;
  const rest = idempotencyKey.startsWith(prefix) ? idempotencyKey.slice(prefix.length).split('/') : [];
  if (rest.length !== 2 || !rest[0]) refused(`${idempotencyKey} is not a key of workflow ${workflowId}`);
  const own = await ownClaim(sql, rest[0]!);
  const done = own.status === 'issued' || own.status === 'upgraded';
  if (!done && !(own.status === 'pending' && own.ledgerWritesRunId === runId)) {
    refused(`the request paid by ${rest[0]} is ${own.status}${own.status === 'pending' ? ', taken to the ledger by another run' : ''}: nothing is signed for it`);
  }
  const mismatch = matches(own.claim);
  if (mismatch) refused(`the step does not match its claim: ${mismatch}`);
  return own.claim;
}

/** Same tier and the same capabilities (order ignored). */
export function sameTerms(claimTier: Tier, claimCaps: readonly string[], tier: string, caps: readonly string[]): string | null {
  if (claimTier !== tier) return `tier ${tier} is not the claim's ${claimTier}`;
  const a = [...claimCaps].sort().join(',');
  const b = [...caps].sort().join(',');
  return a === b ? null : 'the capabilities are not the claim\'s';
}
