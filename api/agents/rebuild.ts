/**
 * Rebuilding the directory from the directory topic (POST /admin/rebuild-cache; SPEC 4.3): the
 * directoryRebuild workflow replays the topic from sequence 1 into the projection, whose NOTIFY '*'
 * reloads every instance's memory. One rebuild at a time: a second call attaches to the running one.
 */
import type { AppContext } from '../context.js';
import { scopedWorkflowId, type WorkflowSettings } from '../workflowSettings.js';
import { startOrAttach, waitForResult } from '../workflowCalls.js';
import { directoryRebuildContract, directoryRebuildWorkflowId, type DirectoryRebuildInput, type DirectoryRebuildResult } from '../../workflows/contracts/directoryRebuild.js';

export type RebuildOutcome = { workflowId: string; counts: Omit<DirectoryRebuildResult, 'status'> };

/** Starts (or attaches to) the rebuild and waits for it at most the app's bounded wait (then WorkflowPending: poll GET /agents). */
export async function rebuildDirectory(ctx: AppContext, settings: WorkflowSettings): Promise<RebuildOutcome> {
  const workflowId = scopedWorkflowId(settings, directoryRebuildWorkflowId());
  const input: DirectoryRebuildInput = settings.timings ? { timings: settings.timings } : {};
  const handle = await startOrAttach(ctx, directoryRebuildContract, workflowId, input, { staticSummary: 'Rebuild the agent directory from the directory topic' });
  const { status: _status, ...counts } = await waitForResult(handle, settings.workflowWaitMs, '/agents');
  return { workflowId, counts };
}
