/**
 * Every workflow the worker runs. Deterministic code only: no Node built-ins, no I/O; side
 * effects are activities. Replay tests (test/workflows) guard determinism.
 */
export {};
export * from './chainIndexer.js';
export * from './passportIssuance.js';
export * from './passportUpgrade.js';
export * from './passportRevoke.js';
export * from './passportRefund.js';
export * from './a2aMessage.js';
export * from './agentRegistration.js';
export * from './directoryRebuild.js';
export * from './domainOwnership.js';
export * from './trustAttest.js';
export * from './taskLifecycle.js';
export * from './sponsoredRegistration.js';
export * from './paymentReconciler.js';
export * from './escrowReconciler.js';
export * from './directoryProbe.js';
