/**
 * Ledger activities of the directory workflows (agentRegistration, directoryRebuild): the directory
 * and audit messages of a registration, through the idempotent submitter (a retried activity never
 * submits twice), and the rebuild that replays the directory topic from sequence 1 into the
 * projection. Messages carry ids and public fields only, never a key.
 */
import { Context } from '@temporalio/activity';
import type { Sql } from 'postgres';
import { parseDirectoryMessage, replayDirectory, type AgentAuditEvent, type AgentRegisteredMessage } from '../../domain/directory.js';
import { buildTopicMessage } from '../../ledger/operations.js';
import { replaceDirectory } from '../../db/queries/agents.js';
import type { LedgerActivityDeps } from '../index.js';
import { ledgerCall } from './passports.js';

export interface TopicWrite {
  transactionId: string;
  sequenceNumber: number | null;
}

export interface DirectoryRebuildCounts {
  /** complete messages read from the directory topic */
  messages: number;
  /** well-formed agent.registered messages */
  registrations: number;
  /** rows written to the projection */
  agents: number;
  /** active entries in the directory after the rebuild (passport not revoked) */
  active: number;
  /** messages that were malformed or repeated a DID or a name taken earlier */
  skipped: number;
  /** sequence number of the last message read (0 for an empty topic) */
  lastSequenceNumber: number;
}

/** Raw topic messages read between heartbeats during a rebuild (the mirror pages 100 at a time). */
const REBUILD_PAGE = 2_000;

export function createDirectoryLedgerActivities(deps: { sql: Sql; ledger: LedgerActivityDeps }) {
  const { deployment, submitter, mirror } = deps.ledger;

  async function publish(topic: 'directory' | 'audit', idempotencyKey: string, message: object): Promise<TopicWrite> {
    const r = await ledgerCall(`${topic} message`, () =>
      submitter.submit({
        idempotencyKey,
        kind: 'topic_message',
        build: () => buildTopicMessage({ topicId: deployment.topics[topic], message: JSON.stringify(message) }),
      }),
    );
    return { transactionId: r.transactionId, sequenceNumber: r.receipt.topicSequenceNumber ? Number(r.receipt.topicSequenceNumber) : null };
  }

  /** Submits the agent.registered message to the directory topic. */
  async function publishDirectoryMessage(input: { idempotencyKey: string; message: AgentRegisteredMessage }): Promise<TopicWrite> {
    return publish('directory', input.idempotencyKey, input.message);
  }

  /** Submits the agent.registered audit event to the audit topic. */
  async function publishAgentAudit(input: { idempotencyKey: string; event: AgentAuditEvent }): Promise<TopicWrite> {
    return publish('audit', input.idempotencyKey, input.event);
  }

  /**
   * Reads the whole directory topic from sequence 1 (chunks joined), replays it with the
   * directory's rules and replaces the projection; every API process reloads on the NOTIFY.
   */
  async function rebuildDirectoryProjection(): Promise<DirectoryRebuildCounts> {
    const parsed: { sequence: number; message: AgentRegisteredMessage }[] = [];
    let after = 0;
    let messages = 0;
    let malformed = 0;
    for (;;) {
      const page = await ledgerCall('read directory topic', () =>
        mirror.getJoinedTopicMessages(deployment.topics.directory, { afterSequence: after, maxRaw: REBUILD_PAGE }),
      );
      for (const m of page.messages) {
        messages++;
        const message = parseDirectoryMessage(m.text());
        if (message) parsed.push({ sequence: m.sequenceNumber, message });
        else malformed++;
      }
      Context.current().heartbeat({ after: page.nextAfterSequence, messages });
      if (page.nextAfterSequence <= after) break;
      after = page.nextAfterSequence;
    }
    const { entries, skipped } = replayDirectory(parsed);
    const written = await replaceDirectory(
      deps.sql,
      entries.map((e) => ({ message: e.message, sequence: e.sequence, network: deployment.network })),
      after,
    );
    return { messages, registrations: parsed.length, agents: written.written, active: written.active, skipped: skipped + malformed, lastSequenceNumber: after };
  }

  return { publishDirectoryMessage, publishAgentAudit, rebuildDirectoryProjection };
}

export type DirectoryLedgerActivities = ReturnType<typeof createDirectoryLedgerActivities>;
