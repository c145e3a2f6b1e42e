/**
 * Every workflow's contract, by its registered type (workflows/contractCheck.ts holds each against
 * the workflow workflows/index.ts exports under that name).
 */
import { a2aMessageContract } from './a2aMessage.js';
import { agentRegistrationContract } from './agentRegistration.js';
import { chainIndexerContract } from './chainIndexer.js';
import { directoryProbeContract } from './directoryProbe.js';
import { directoryRebuildContract } from './directoryRebuild.js';
import { domainOwnershipContract } from './domainOwnership.js';
import { escrowReconcilerContract } from './escrowReconciler.js';
import { passportIssuanceContract } from './passportIssuance.js';
import { passportRefundContract } from './passportRefund.js';
import { passportRevokeContract } from './passportRevoke.js';
import { passportUpgradeContract } from './passportUpgrade.js';
import { paymentReconcilerContract } from './paymentReconciler.js';
import { sponsoredRegistrationContract } from './sponsoredRegistration.js';
import { taskLifecycleContract } from './taskLifecycle.js';
import { trustAttestContract } from './trustAttest.js';

export const workflowContracts = {
  a2aMessage: a2aMessageContract,
  agentRegistration: agentRegistrationContract,
  chainIndexer: chainIndexerContract,
  directoryProbe: directoryProbeContract,
  directoryRebuild: directoryRebuildContract,
  domainOwnership: domainOwnershipContract,
  escrowReconciler: escrowReconcilerContract,
  passportIssuance: passportIssuanceContract,
  passportRefund: passportRefundContract,
  passportRevoke: passportRevokeContract,
  passportUpgrade: passportUpgradeContract,
  paymentReconciler: paymentReconcilerContract,
  sponsoredRegistration: sponsoredRegistrationContract,
  taskLifecycle: taskLifecycleContract,
  trustAttest: trustAttestContract,
} as const;

/** Each key is its contract's type (a contract filed under another name is a compile error here). */
export type WorkflowContracts = typeof workflowContracts;
const keysAreTypes: { [K in keyof WorkflowContracts]: WorkflowContracts[K]['type'] extends K ? true : false } = {
  a2aMessage: true,
  agentRegistration: true,
  chainIndexer: true,
  directoryProbe: true,
  directoryRebuild: true,
  domainOwnership: true,
  escrowReconciler: true,
  passportIssuance: true,
  passportRefund: true,
  passportRevoke: true,
  passportUpgrade: true,
  paymentReconciler: true,
  sponsoredRegistration: true,
  taskLifecycle: true,
  trustAttest: true,
};
void keysAreTypes;
