// The answers of the paid-request saga (api/passports/outcomes.ts) for a request that did not get what
// it paid for: the failed step is data (a claim row's failed_step, a workflow result's failedStep), the
// refund is named, and a payment that never moved says that nothing was taken.
import { describe, expect, it } from 'vitest';
import { executionFailed, outcomeOfResult, outcomeOfRow, refundSentence, settlementFailed } from '../../api/passports/outcomes.js';
import { ApiError } from '../../api/errors.js';

const PAYMENT = '0.0.1001@1700000000.000000001';

describe('paid passport request outcomes', () => {
  it('a refunded request names the failed step and the refund transaction (502 execution_failed)', () => {
    const e = executionFailed('The passport could not be issued', PAYMENT, 'mint', 'mint failed: LedgerError.INVALID_TOKEN_ID', { refund: 'refunded', refundTransactionId: '0.0.2@1.2' });
    expect([e.code, e.status, e.message]).toEqual(['execution_failed', 502, 'The passport could not be issued: mint failed']);
    expect(e.extra).toEqual({ paymentTransactionId: PAYMENT, failedStep: 'mint', refund: 'refunded', refundTransactionId: '0.0.2@1.2' });
    expect(e.hint).toContain(`was refunded in 0.0.2@1.2`);
  });

  it('the failed step of a finished request comes from its row, whatever its error text says', () => {
    const row = { status: 'refunded', refund_transaction_id: '0.0.2@3.4', error: 'some wording that changed', failed_step: 'deliver' };
    const e = executionFailed('The passport could not be issued', PAYMENT, row.failed_step, row.error, outcomeOfRow(row, 'refunded'));
    expect(e.extra).toMatchObject({ failedStep: 'deliver', refund: 'refunded', refundTransactionId: '0.0.2@3.4' });
  });

  it('a release without a refund says whether the payment ever moved (from the payment, not from the text)', () => {
    const never = outcomeOfResult({ status: 'released', reason: 'confirmSettlement failed: anything' }, 'failed');
    expect(refundSentence(PAYMENT, never)).toMatch(/nothing was taken/);
    const moved = outcomeOfResult({ status: 'released', reason: 'refund failed: LedgerError.INSUFFICIENT_PAYER_BALANCE' }, 'settled');
    expect(refundSentence(PAYMENT, moved)).toMatch(/could not be refunded automatically .*INSUFFICIENT_PAYER_BALANCE.*reconciler retries it/);
    expect(refundSentence(PAYMENT, { refund: 'pending', refundWorkflowId: 'passport-refund:x' })).toMatch(/is being refunded \(workflow passport-refund:x\)/);
  });

  it('a settlement that failed for good is 400 passport_payment_failed: nothing taken, build a new payment', () => {
    const e = settlementFailed(PAYMENT, 'settle failed: PaymentSettlementFailed: payment x was not settled: insufficient_payer_balance');
    expect([e.code, e.status]).toEqual(['passport_payment_failed', 400]);
    expect(e.message).toBe('Settlement failed: PaymentSettlementFailed: payment x was not settled: insufficient_payer_balance');
    expect(e.hint).toMatch(/^Nothing was taken: payment .* did not move on the ledger/);
    expect(e.extra).toEqual({ paymentTransactionId: PAYMENT, failedStep: 'settle', refund: 'none' });
    // with the x402 refusal of the live request (terms and PAYMENT-REQUIRED), its shape is used
    const live = settlementFailed(PAYMENT, 'settle failed: expired', (message, hint) => new ApiError('passport_payment_failed', message, { hint, extra: { payTo: '0.0.9' } }));
    expect(live.extra).toEqual({ payTo: '0.0.9' });
  });
});
