/**
 * How this app's routes run workflows (every feature: passports, agents, A2A, registry, trust, the
 * marketplace's task steps): the one bounded wait before WorkflowPending (202; api/workflowCalls.ts),
 * the timings handed to new workflows, and the optional workflow id scope. One object per app, the
 * `workflowSettings` decorator set by buildApp (api/app.ts), so a test holding the app can shorten
 * waits (the marketplace reads the same object as `app.market.settings`).
 */
import type { Config } from '../config/index.js';
import type { PassportWorkflowTimings } from '../workflows/contracts/passport.js';

/** How long a request waits for its workflow (or a task step) before answering 202 (SPEC: never a hanging request). */
export const WORKFLOW_WAIT_MS = 20_000;

export interface WorkflowSettings {
  /** bounded wait for a workflow before answering 202 */
  workflowWaitMs: number;
  /** retry/timeout knobs handed to the workflows (defaults when unset) */
  timings?: PassportWorkflowTimings;
  /**
   * Prefix of every workflow id these routes start (default none). Tests that run several localnets
   * against one Temporal namespace set a unique one, since their ledger ids coincide.
   */
  workflowIdScope?: string;
}

declare module 'fastify' {
  interface FastifyInstance {
    /** The app's workflow settings (api/workflowSettings.ts). */
    workflowSettings: WorkflowSettings;
  }
}

/** The settings a new app starts with: WORKFLOW_ID_SCOPE (a deployment sharing its namespace with another, e.g. tests' child processes). */
export function initialWorkflowSettings(config: Config): WorkflowSettings {
  return { workflowWaitMs: WORKFLOW_WAIT_MS, ...(config.WORKFLOW_ID_SCOPE ? { workflowIdScope: config.WORKFLOW_ID_SCOPE } : {}) };
}

/** The workflow id as started: the business id, behind the optional test scope. */
export function scopedWorkflowId(settings: WorkflowSettings, id: string): string {
  return `${settings.workflowIdScope ?? ''}${id}`;
}
