/**
 * paymentReconciler: one pass over the payments that have no outcome after the bound (issue 23),
 * run by a Temporal Schedule (payment-reconciler:{taskQueue}, every PAYMENT_RECONCILE_EVERY_MS; see
 * temporal/paymentReconciler.ts), so each pass and what it did are visible in the Temporal UI.
 *
 * A payment without an outcome is one recorded more than `olderThanMs` ago that is neither refunded
 * nor failed and whose request has no passport (or upgrade). For each, as a child workflow (linked
 * from the pass in the UI):
 *   - its request's claim is still pending: the request's own workflow is run again under its own id
 *     with what the claim recorded (a run still going is left alone: the start answers "already
 *     started"); it settles or finds the payment, and issues (or upgrades), or refunds by its saga,
 *     or releases the claim when the payment never moved;
 *   - otherwise (no claim, or a claim refused or released): passportRefund pays it back (or finds
 *     that it never moved).
 * Every payment the pass finished or refunded gets a payment.reconciled message on the audit topic
 * (and so in the audit_events projection); the pass's result lists every action. Children outlive
 * their pass (ParentClosePolicy.ABANDON): a pass that times out never stops an issuance or a refund
 * half-way; the next pass finds it running.
 */
import { ChildWorkflowFailure, executeChild, ParentClosePolicy, patched, proxyActivities, workflowInfo } from '@temporalio/workflow';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import type { PaymentReconcilerActivities, ClaimedRequest } from '../activities/db/paymentReconciler.js';
import { passportActivities } from './passportCommon.js';
import { passportRefundWorkflowId } from './contracts/passportRefund.js';
import type { PaymentReconcilerInput, PaymentReconcilerResult, ReconcileAction } from './contracts/paymentReconciler.js';
import { passportIssuance } from './passportIssuance.js';
import { passportUpgrade } from './passportUpgrade.js';
import { passportRefund } from './passportRefund.js';
import { RETRY_MAXIMUM_MS } from './activityOptions.js';
import { BOUND_MESSAGES_PATCH, childBinding } from './binding.js';
import type { MessageBinding } from './contracts/binding.js';

/**
 * A child's input bound to the child (workflows/binding.ts); histories recorded before the binding
 * started their children without one (the patch keeps their commands as they were).
 */
function bindingOf(workflowId: string, type: string): { binding?: MessageBinding } {
  return patched(BOUND_MESSAGES_PATCH) ? { binding: childBinding(workflowId, type) } : {};
}

export async function paymentReconciler(input: PaymentReconcilerInput): Promise<PaymentReconcilerResult> {
  const t = input.timings ?? {};
  const db = proxyActivities<PaymentReconcilerActivities>({
    startToCloseTimeout: t.activityTimeoutMs ?? 60_000,
    retry: { initialInterval: t.retryInitialMs ?? 1_000, maximumInterval: t.retryMaximumMs ?? RETRY_MAXIMUM_MS, backoffCoefficient: 2, maximumAttempts: 5 },
  });
  const { durable } = passportActivities(input.timings);
  const scope = input.workflowIdScope ?? '';
  const timings = input.timings ? { timings: input.timings } : {};
  const unfinished = await db.listUnfinishedPayments({ olderThanMs: input.olderThanMs, limit: input.limit ?? 20 });

  const finishRequest = async (paymentTransactionId: string, request: ClaimedRequest): Promise<ReconcileAction> => {
    const base = { paymentTransactionId, workflowId: request.workflowId };
    const payment = request.payment; // no PAYMENT-SIGNATURE: settlePayment finds the payment settled, or dead
    try {
      if (request.kind === 'issuance') {
        const r = await executeChild(passportIssuance, {
          workflowId: request.workflowId,
          parentClosePolicy: ParentClosePolicy.ABANDON,
          args: [{ network: request.network, accountId: request.accountId, did: request.did, tier: request.tier, capabilities: request.capabilities, ...(request.endpoint ? { endpoint: request.endpoint } : {}), payment, ...timings, ...bindingOf(request.workflowId, 'passportIssuance') }],
        });
        if (r.status === 'issued') return { ...base, action: 'issued', detail: `${r.tokenId}/${r.serialNumber}` };
        return r.status === 'refunded' ? { ...base, action: 'refunded', detail: r.refundTransactionId } : { ...base, action: 'released', detail: r.reason };
      }
      const r = await executeChild(passportUpgrade, {
        workflowId: request.workflowId,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        args: [{ tokenId: request.tokenId, serial: request.serial, accountId: request.accountId, did: request.did, oldTier: request.oldTier, newTier: request.newTier, capabilities: request.capabilities, payment, ...timings, ...bindingOf(request.workflowId, 'passportUpgrade') }],
      });
      if (r.status === 'upgraded') return { ...base, action: 'upgraded', detail: `${r.tokenId}/${r.serialNumber} ${r.newTier}` };
      return r.status === 'refunded' ? { ...base, action: 'refunded', detail: r.refundTransactionId } : { ...base, action: 'released', detail: r.reason };
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return { ...base, action: 'running' };
      if (err instanceof ChildWorkflowFailure) return { ...base, action: 'unresolved', detail: err.cause?.message ?? err.message };
      throw err;
    }
  };

  const refund = async (paymentTransactionId: string, why: string): Promise<ReconcileAction> => {
    const workflowId = `${scope}${passportRefundWorkflowId(paymentTransactionId)}`;
    try {
      const r = await executeChild(passportRefund, {
        workflowId,
        parentClosePolicy: ParentClosePolicy.ABANDON,
        args: [{ paymentTransactionId, reason: `reconciled: ${why}`, ...timings, ...bindingOf(workflowId, 'passportRefund') }],
      });
      return r.status === 'refunded'
        ? { paymentTransactionId, workflowId, action: 'refunded', detail: r.refundTransactionId }
        : { paymentTransactionId, workflowId, action: 'released', detail: r.reason };
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) return { paymentTransactionId, workflowId, action: 'running' };
      if (err instanceof ChildWorkflowFailure) return { paymentTransactionId, workflowId, action: 'unresolved', detail: err.cause?.message ?? err.message };
      throw err;
    }
  };

  const actions = await Promise.all(
    unfinished.map(async (p): Promise<ReconcileAction> => {
      const request = p.request?.status === 'pending' ? await db.claimedRequest({ paymentTransactionId: p.transactionId }) : null;
      const action = request ? await finishRequest(p.transactionId, request) : await refund(p.transactionId, p.request ? `its ${p.request.kind} is ${p.request.status}` : 'no request claims it');
      if (action.action === 'issued' || action.action === 'upgraded' || action.action === 'refunded') {
        const [tokenId, serial] = action.action === 'refunded' ? [] : (action.detail ?? '').split(' ')[0].split('/');
        await durable.publishAudit({
          idempotencyKey: `reconcile:${p.transactionId}`,
          event: {
            v: 1,
            type: 'payment.reconciled',
            paymentTransactionId: p.transactionId,
            outcome: action.action,
            reason: `no outcome ${Math.round(input.olderThanMs / 1000)} s after the payment was recorded (pass ${workflowInfo().workflowId})`,
            timestamp: Date.now(),
            ...(request ? { did: request.did } : {}),
            ...(tokenId && serial ? { tokenId, serial: Number(serial) } : {}),
            ...(action.action === 'refunded' && action.detail ? { refundTransactionId: action.detail } : {}),
          },
        });
      }
      return action;
    }),
  );
  return { checked: unfinished.length, actions };
}
