/**
 * The poster's signatures of escrow schedules, made in this process (SPEC 4.4a: posterPrivateKey
 * signs inside the API only): a ScheduleSign per pending schedule, built by ledger/operations.ts
 * buildScheduleSign, paid by the service's operator (so the poster's balance moves by the escrowed
 * amount only) and signed in memory by the poster's key. Only the signed bytes go to the workflow;
 * the key is dropped when signScheduleSigns returns.
 */
import { AccountId, TransactionId, type PrivateKey } from '@hashgraph/sdk';
import { clientNodeAccountIds } from '../../ledger/client.js';
import { signTransaction } from '@agent-passport/core/keys';
import { buildScheduleSign } from '../../ledger/operations.js';
import { checkScheduleSign } from '../../ledger/scheduleSignCheck.js';
import type { ScheduleSignBytes, TaskLedgerFacts } from '../../workflows/contracts/taskLifecycle.js';
import type { Market } from './state.js';

/**
 * ScheduleSign transactions for the given schedules, checked as the workflow's activity will check
 * them (ledger/scheduleSignCheck.ts) before they leave this function.
 */
export async function signScheduleSigns(market: Market, scheduleIds: string[], posterKey: PrivateKey): Promise<ScheduleSignBytes[]> {
  const facts = ledgerFacts(market);
  const node = market.ledger.deployment.node?.accountId ?? facts.nodeAccountIds[0];
  const out: ScheduleSignBytes[] = [];
  for (const scheduleId of scheduleIds) {
    const tx = buildScheduleSign({ scheduleId })
      .setTransactionId(TransactionId.generate(AccountId.fromString(facts.operator)))
      .setNodeAccountIds([AccountId.fromString(node)])
      .freeze();
    await signTransaction(tx, posterKey);
    // the checker the workflow's activity applies to these bytes before the operator pays for and signs them (issue 19)
    checkScheduleSign(tx, { payer: facts.operator, pendingScheduleIds: scheduleIds, scheduleId }, posterKey.publicKey, { nodeAccountIds: facts.nodeAccountIds, now: Date.now() });
    out.push({ scheduleId, signedBytes: Buffer.from(tx.toBytes()).toString('base64') });
  }
  return out;
}

/** The service's accounts and nodes a task workflow checks client bytes against (workflows/contracts/taskLifecycle.ts TaskLedgerFacts). */
export function ledgerFacts(market: Market): TaskLedgerFacts {
  const ledger = market.ledger;
  return {
    operator: ledger.deployment.operator.accountId,
    treasury: ledger.deployment.treasury,
    nodeAccountIds: clientNodeAccountIds(ledger.client).map((n) => n.toString()),
  };
}
