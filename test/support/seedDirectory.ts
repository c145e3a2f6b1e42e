/**
 * Writes directory entries and marketplace tasks straight into their PostgreSQL projections (with the
 * NOTIFY the real writers send), for tests of the read side (search, feed, pages) that do not need
 * the registration and posting workflows.
 */
import { v7 as uuidv7 } from 'uuid';
import type { Sql } from '../../db/client.js';
import { recordRegisteredAgent } from '../../db/queries/agents.js';
import { upsertTask } from '../../db/queries/marketTasks.js';
import type { Capability } from '../../domain/capabilities.js';
import { postedTask, type TaskRecord, type TaskStatus } from '../../domain/market.js';
import type { Tier } from '../../domain/tiers.js';

let accountCounter = 0;

export interface SeedAgent {
  name: string;
  capabilities?: Capability[];
  skills?: string[];
  tier?: Tier;
  /** directory sequence (order of the directory; search and the feed list the highest first) */
  sequence: number;
  timestamp?: number;
  accountNum?: number;
}

/** Records a registered agent; returns its DID. */
export async function seedAgent(sql: Sql, a: SeedAgent): Promise<string> {
  const num = a.accountNum ?? 900_000 + process.pid * 100 + ++accountCounter;
  const accountId = `0.0.${num}`;
  const did = `did:hedera:local:${accountId}`;
  await recordRegisteredAgent(sql, {
    message: {
      v: 1,
      type: 'agent.registered',
      did,
      accountId,
      tokenId: '0.0.7001',
      serial: num,
      name: a.name,
      capabilities: a.capabilities ?? ['api_call'],
      endpoint: `https://agents.example/${num}`,
      tier: a.tier ?? 'gold',
      timestamp: a.timestamp ?? Date.now(),
      ...(a.skills ? { skills: a.skills } : {}),
    },
    network: 'local',
    directorySequence: a.sequence,
    directoryTransactionId: `0.0.2@${num}.000000000`,
    auditTransactionId: `0.0.2@${num}.000000001`,
    workflowId: `seed-agent-${num}`,
  });
  return did;
}

export interface SeedTask {
  title: string;
  description?: string;
  priceHbar?: number;
  capabilities?: string[];
  status?: TaskStatus;
  createdAt?: string;
  taskId?: string;
  /** projection step; a later write needs a higher one */
  seq?: number;
}

/** Records a task (insert, or update when `seq` is higher); returns the record. */
export async function seedTask(sql: Sql, t: SeedTask): Promise<TaskRecord> {
  const now = t.createdAt ?? new Date().toISOString();
  const price = t.priceHbar ?? 12.5;
  const record: TaskRecord = {
    ...postedTask(
      {
        taskId: t.taskId ?? uuidv7(),
        title: t.title,
        description: t.description ?? '',
        priceHbar: price,
        priceTinybars: String(BigInt(Math.round(price * 1e8))),
        capabilities: t.capabilities ?? ['data_provide'],
        posterDid: 'did:hedera:local:0.0.1001',
        verifierType: 'none',
        verifierConfig: null,
        deadline: null,
        feeBps: 0,
        escrow: false,
      },
      now,
    ),
    status: t.status ?? 'posted',
  };
  await upsertTask(sql, record, t.seq ?? 1);
  return record;
}
