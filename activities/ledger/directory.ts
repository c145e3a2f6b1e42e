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
import type { MirrorTopicMessage } from '../../ledger/mirror.js';
import { replaceDirectory } from '../../db/queries/agents.js';
import type { LedgerServices } from '../../ledger/services.js';
import type { DirectoryRebuildCounts } from '../../workflows/contracts/directoryRebuild.js';
import { ledgerCall } from './ledgerCall.js';

export interface TopicWrite {
  transactionId: string;
  sequenceNumber: number | null;
}

/** Raw topic messages read between heartbeats during a rebuild (the mirror pages 100 at a time). */
const REBUILD_PAGE = 2_000;

/**
 * The complete messages of a whole topic read: unchunked ones, and chunk groups holding every
 * chunk (joined in chunk order, placed at their first chunk). A group that never completed is
 * counted and skipped; unlike a cursor-based join it never holds back the messages after it.
 */
export function completeMessages(raw: readonly MirrorTopicMessage[]): { messages: { sequence: number; text: string }[]; incomplete: number } {
  const out: { sequence: number; text: string }[] = [];
  const groups = new Map<string, MirrorTopicMessage[]>();
  for (const m of raw) {
    const c = m.chunk_info;
    if (!c || c.total <= 1) {
      out.push({ sequence: m.sequence_number, text: Buffer.from(m.message, 'base64').toString('utf8') });
      continue;
    }
    const t = c.initial_transaction_id;
    const key = `${t.account_id}-${t.transaction_valid_start}-${t.nonce ?? 0}`;
    const list = groups.get(key) ?? [];
    list.push(m);
    groups.set(key, list);
  }
  let incomplete = 0;
  for (const list of groups.values()) {
    const total = list[0]!.chunk_info!.total;
    const byNumber = new Map<number, MirrorTopicMessage>();
    for (const m of list) if (!byNumber.has(m.chunk_info!.number)) byNumber.set(m.chunk_info!.number, m);
    if (byNumber.size < total) {
      incomplete++;
      continue;
    }
    const parts = [...byNumber.entries()].sort((a, b) => a[0] - b[0]).map(([, m]) => Buffer.from(m.message, 'base64'));
    out.push({ sequence: Math.min(...list.map((m) => m.sequence_number)), text: Buffer.concat(parts).toString('utf8') });
  }
  out.sort((a, b) => a.sequence - b.sequence);
  return { messages: out, incomplete };
}

export function createDirectoryLedgerActivities(deps: { sql: Sql; ledger: LedgerServices }) {
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
    const raw: MirrorTopicMessage[] = [];
    let after = 0;
    for (;;) {
      const page = await ledgerCall('read directory topic', () => mirror.getTopicMessages(deployment.topics.directory, { afterSequence: after, limit: REBUILD_PAGE }));
      if (page.length === 0) break;
      raw.push(...page);
      after = page[page.length - 1]!.sequence_number;
      Context.current().heartbeat({ after, read: raw.length });
    }
    const complete = completeMessages(raw);
    const parsed: { sequence: number; message: AgentRegisteredMessage }[] = [];
    let malformed = complete.incomplete;
    for (const m of complete.messages) {
      const message = parseDirectoryMessage(m.text);
      if (message) parsed.push({ sequence: m.sequence, message });
      else malformed++;
    }
    const messages = complete.messages.length;
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
