/** Contract of directoryRebuild (workflows/directoryRebuild.ts): started by POST /admin/rebuild-cache (api/routes/agents/). */
import type { PassportWorkflowTimings } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** One rebuild at a time: a second request attaches to the running one. */
export const DIRECTORY_REBUILD_WORKFLOW_ID = 'directory-rebuild';

export function directoryRebuildWorkflowId(): string {
  return DIRECTORY_REBUILD_WORKFLOW_ID;
}

/** What the rebuild activity (rebuildDirectoryProjection) counted. */
export interface DirectoryRebuildCounts {
  /** complete messages read from the directory topic */
  messages: number;
  /** well-formed agent.registered messages */
  registrations: number;
  /** rows written to the projection */
  agents: number;
  /** active entries in the directory after the rebuild (passport not revoked) */
  active: number;
  /**
   * messages that are not a well-formed agent.registered (other types share the topic, e.g. the
   * registry's registry.sponsored records), chunk groups that never completed, and repeats of a DID
   * or a name taken earlier
   */
  skipped: number;
  /** sequence number of the last message read (0 for an empty topic) */
  lastSequenceNumber: number;
}

export interface DirectoryRebuildInput extends Bound {
  timings?: PassportWorkflowTimings;
}

export interface DirectoryRebuildResult extends DirectoryRebuildCounts {
  status: 'rebuilt';
  startedAt: number;
  finishedAt: number;
}

export const directoryRebuildContract = workflowContract<DirectoryRebuildInput, DirectoryRebuildResult>()({
  type: 'directoryRebuild',
  workflowId: directoryRebuildWorkflowId,
});
