/** Contract of a2aMessage (workflows/a2aMessage.ts): started by the A2A send routes (api/routes/a2a.ts) with the signed chunk transactions only. */
import type { PassportWorkflowTimings } from './passport.js';
import { workflowContract } from './contract.js';
import type { Bound } from './binding.js';

/** a2a:{transaction id of the first chunk} */
export function a2aMessageWorkflowId(transactionId: string): string {
  return `a2a:${transactionId}`;
}

/** The message as the mirror shows it once projected into a2a_messages (activity projectA2aMessage). */
export interface ProjectedA2aMessage {
  id: string;
  sequenceNumber: number;
  consensusTimestamp: string;
  transactionId: string;
  chunks: number;
}

export interface A2aMessageInput extends Bound {
  messageId: string;
  /** transaction id of the first chunk (SDK form 0.0.x@seconds.nanos) */
  transactionId: string;
  /** one signed single-chunk transaction per chunk, base64, in chunk order */
  chunks: string[];
  timings?: PassportWorkflowTimings;
}

export type A2aMessageResult =
  | ({ status: 'delivered' } & ProjectedA2aMessage)
  | { status: 'refused'; ledgerStatus: string; reason: string };

export const a2aMessageContract = workflowContract<A2aMessageInput, A2aMessageResult>()({
  type: 'a2aMessage',
  workflowId: a2aMessageWorkflowId,
});
