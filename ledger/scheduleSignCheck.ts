/**
 * The poster's ScheduleSign of a task's escrow schedule (issue 19 item 1). The service pays for it
 * (the transaction id's account is the operator, so the poster's balance moves by the escrowed
 * amount only), which means the operator signs it, and every valid signature on a ScheduleSign
 * counts toward the schedule it names: co-signing a ScheduleSign of any other schedule would lend
 * the operator's key to that schedule's transfer. So before the operator signs, the bytes must be
 * exactly one ScheduleSign of one of the task's pending escrow schedules (domain/ledgerTransaction.ts
 * scheduleSignProblem: type, schedule id, payer, memo, node, fee and validity window), signed by the
 * poster's key.
 *
 * Used by the API after it signed the ScheduleSign with posterPrivateKey (api/market/signing.ts)
 * and by the activity that submits it (activities/ledger/market.ts), on the same bytes.
 */
import { ScheduleSignTransaction, type PublicKey, type Transaction } from '@hashgraph/sdk';
import { CheckedTransaction } from './checkedTransaction.js';
import { decodeClientTransaction, scheduleSignProblem, type ExpectedScheduleSign } from '../domain/ledgerTransaction.js';
import { requireSignature, TransferCheckError, type TransferCheckPolicy } from './transferCheck.js';

export type { ExpectedScheduleSign };

/**
 * Checks a poster-signed ScheduleSign and returns it for the submitter (operator pays and signs).
 * Throws TransferCheckError (400; 403 for a payer other than the operator).
 */
export function checkScheduleSign(tx: Transaction, expected: ExpectedScheduleSign & { payer: string }, posterKey: PublicKey, policy: TransferCheckPolicy): CheckedTransaction {
  const decoded = decodeClientTransaction(tx.toBytes());
  if (!decoded) throw new TransferCheckError('invalid_bytes', 'the ScheduleSign bytes are not a Hedera transaction');
  const p = scheduleSignProblem(decoded, expected, policy);
  if (p) throw TransferCheckError.of(p);
  if (!(tx instanceof ScheduleSignTransaction)) throw new TransferCheckError('invalid_transaction_type', `only a ScheduleSign is accepted, got ${tx.constructor.name}`);
  requireSignature(tx, posterKey, {
    missing: new TransferCheckError('missing_signer_signature', "the ScheduleSign is not signed by the poster's key", 'Send posterPrivateKey: the service signs the schedule with it in memory'),
    invalid: new TransferCheckError('invalid_signer_signature', "the poster's signature on the ScheduleSign does not verify", 'Send posterPrivateKey again'),
  });
  return CheckedTransaction.passed(tx, { operatorPays: true, checker: 'schedule sign' });
}
