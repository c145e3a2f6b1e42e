/**
 * Queries of the agent directory projection (db/migrations/0006_agents.ts). Every write a cache
 * depends on announces itself on CHANNELS.agent in its own transaction (payload: the DID, or '*'
 * after a rebuild, which tells every process to reload everything). A passport revocation turns
 * its agents inactive through the migration's trigger, which notifies the same way.
 */
import type { Sql, TransactionSql } from 'postgres';
import { CHANNELS, notifyChange, RELOAD_ALL } from '../notify.js';
import { appendEvents } from './events.js';
import type { AgentEntry, AgentRegisteredMessage } from '../../domain/directory.js';
import type { Capability } from '../../domain/capabilities.js';
import type { Tier } from '../../domain/tiers.js';
import type { CardVerificationReason } from '../../domain/agentCardSignature.js';

/** NOTIFY payload after a rebuild: reload the whole directory (db/notify.ts, every channel's). */
export { RELOAD_ALL };

export interface AgentRow {
  did: string;
  network: string;
  account_id: string;
  token_id: string;
  serial: bigint;
  name: string;
  capabilities: string[];
  skills: string[] | null;
  endpoint: string;
  description: string | null;
  agent_card: string | null;
  tier: string;
  registered_at: Date | null;
  active: boolean;
  status: 'pending' | 'registered';
  directory_sequence: bigint | null;
  directory_transaction_id: string | null;
  audit_transaction_id: string | null;
  workflow_id: string | null;
  /** liveness and card verification (0062_directory_liveness) */
  probed_at: Date | null;
  last_seen_at: Date | null;
  online: boolean | null;
  stale: boolean;
  card_verified: boolean;
  card_verification: string | null;
}

/** The served entry of a registered row, and its place in the directory order. */
export function agentEntryOf(row: AgentRow): { entry: AgentEntry; sequence: number } {
  const entry: AgentEntry = {
    did: row.did,
    tokenId: row.token_id,
    serial: Number(row.serial),
    accountId: row.account_id,
    name: row.name,
    capabilities: row.capabilities as Capability[],
    endpoint: row.endpoint,
    tier: row.tier as Tier,
    timestamp: row.registered_at?.getTime() ?? 0,
    active: row.active,
  };
  if (row.skills) entry.skills = row.skills;
  if (row.description) entry.description = row.description;
  if (row.agent_card) entry.agentCard = row.agent_card;
  entry.online = row.online ?? null;
  entry.lastSeenAt = row.last_seen_at?.getTime() ?? null;
  entry.stale = row.stale ?? false;
  entry.cardVerified = row.card_verified ?? false;
  entry.cardVerification = (row.card_verification ?? (row.agent_card ? 'not_checked' : 'no_card')) as CardVerificationReason;
  return { entry, sequence: Number(row.directory_sequence ?? 0) };
}

export async function findAgent(sql: Sql, did: string): Promise<AgentRow | null> {
  const rows = await sql<AgentRow[]>`select * from agents where did = ${did}`;
  return rows[0] ?? null;
}

/** A registered agent with this name (case-insensitive), or a pending claim of it. */
export async function findAgentByName(sql: Sql, name: string): Promise<AgentRow | null> {
  const rows = await sql<AgentRow[]>`select * from agents where lower(name) = lower(${name})`;
  return rows[0] ?? null;
}

export async function listRegisteredAgents(sql: Sql): Promise<AgentRow[]> {
  return sql<AgentRow[]>`select * from agents where status = 'registered' order by directory_sequence, did`;
}

export interface AgentClaim {
  did: string;
  network: string;
  accountId: string;
  tokenId: string;
  serial: number;
  name: string;
  capabilities: string[];
  skills?: string[];
  endpoint: string;
  description?: string;
  agentCard?: string;
  tier: string;
  workflowId: string;
  /** the card's verification at registration (the card answered then: the entry starts online) */
  card?: { cardVerified: boolean; cardVerification: string };
}

export type AgentClaimOutcome = { claimed: true } | { claimed: false; conflict: 'did' | 'name'; row: AgentRow };

/**
 * Claims a DID and a name for a registration about to start (status pending). The unique DID and
 * lower(name) indexes make two concurrent registrations of one DID or name end with one claim.
 */
export async function claimAgent(sql: Sql, c: AgentClaim): Promise<AgentClaimOutcome> {
  const inserted = await sql<AgentRow[]>`
    insert into agents (did, network, account_id, token_id, serial, name, capabilities, skills, endpoint, description,
                        agent_card, tier, status, workflow_id, card_verified, card_verification, online, last_seen_at)
    values (${c.did}, ${c.network}, ${c.accountId}, ${c.tokenId}, ${c.serial}, ${c.name}, ${sql.json(c.capabilities)},
            ${c.skills ? sql.json(c.skills) : null}, ${c.endpoint}, ${c.description ?? null}, ${c.agentCard ?? null},
            ${c.tier}, 'pending', ${c.workflowId}, ${c.card?.cardVerified ?? false}, ${c.card?.cardVerification ?? null},
            ${c.card ? true : null}, ${c.card ? new Date() : null})
    on conflict do nothing
    returning did`;
  if (inserted.length === 1) return { claimed: true };
  const byDid = await findAgent(sql, c.did);
  if (byDid) return { claimed: false, conflict: 'did', row: byDid };
  const byName = await findAgentByName(sql, c.name);
  if (byName) return { claimed: false, conflict: 'name', row: byName };
  return claimAgent(sql, c); // the conflicting claim was released meanwhile
}

/**
 * Drops a pending claim (its workflow failed, or never started: `olderThanMs` then guards the
 * moment between the claim and the workflow start). Registered rows are never touched.
 */
export async function releaseAgentClaim(sql: Sql, did: string, olderThanMs = 0): Promise<boolean> {
  const rows = await sql`
    delete from agents
     where did = ${did} and status = 'pending' and created_at <= now() - make_interval(secs => ${olderThanMs / 1000})
    returning did`;
  return rows.length === 1;
}

/**
 * `active` of a registration: false when the passport is revoked in the passports projection
 * (a passport the projection does not know counts as active: the ledger check was done before).
 */
function activeOf(tx: Sql | TransactionSql, tokenId: string, serial: number) {
  return tx`not exists (select 1 from passports p where p.token_id = ${tokenId} and p.serial = ${serial} and p.revoked_at is not null)`;
}

export interface RegisteredAgent {
  message: AgentRegisteredMessage;
  network: string;
  directorySequence: number;
  directoryTransactionId: string;
  auditTransactionId: string;
  workflowId: string;
}

/**
 * Writes the projection row of a registration whose directory message is on the topic and
 * announces it. Idempotent: a retry rewrites the same values.
 */
export async function recordRegisteredAgent(sql: Sql, a: RegisteredAgent): Promise<void> {
  const m = a.message;
  await sql.begin(async (tx) => {
    await tx`
      insert into agents (did, network, account_id, token_id, serial, name, capabilities, skills, endpoint, description,
                          agent_card, tier, registered_at, active, status, directory_sequence, directory_transaction_id,
                          audit_transaction_id, workflow_id)
      values (${m.did}, ${a.network}, ${m.accountId}, ${m.tokenId}, ${m.serial}, ${m.name}, ${tx.json(m.capabilities)},
              ${m.skills ? tx.json(m.skills) : null}, ${m.endpoint}, ${m.description ?? null}, ${m.agentCard ?? null},
              ${m.tier}, ${new Date(m.timestamp)}, ${activeOf(tx, m.tokenId, m.serial)}, 'registered', ${a.directorySequence},
              ${a.directoryTransactionId}, ${a.auditTransactionId}, ${a.workflowId})
      on conflict (did) do update set
        account_id = excluded.account_id, token_id = excluded.token_id, serial = excluded.serial, name = excluded.name,
        capabilities = excluded.capabilities, skills = excluded.skills, endpoint = excluded.endpoint,
        description = excluded.description, agent_card = excluded.agent_card, tier = excluded.tier,
        registered_at = excluded.registered_at, active = excluded.active, status = 'registered',
        directory_sequence = excluded.directory_sequence, directory_transaction_id = excluded.directory_transaction_id,
        audit_transaction_id = excluded.audit_transaction_id, workflow_id = excluded.workflow_id, updated_at = now()`;
    await notifyChange(tx, CHANNELS.agent, m.did);
    // the agent's own event, once per directory message (a retry adds nothing), last in the transaction
    await appendEvents(tx, [
      {
        type: 'agent.registered',
        subject: m.did,
        audience: [m.did],
        data: { did: m.did, name: m.name, capabilities: m.capabilities, endpoint: m.endpoint, tier: m.tier, directorySequence: a.directorySequence, directoryTransactionId: a.directoryTransactionId },
        key: `agent.registered:${m.did}:${a.directorySequence}`,
      },
    ]);
  });
}

export interface ReplayedAgent {
  message: AgentRegisteredMessage;
  sequence: number;
  network: string;
}

/**
 * Replaces the registered rows by the replayed topic (DESIGN.md section 10: the topic is the
 * record), in one transaction, and tells every process to reload. Only rows the replay covers
 * (directory sequence up to `throughSequence`, the last message read) are replaced, so a
 * registration recorded while the rebuild ran is not lost. Tier and active come from the
 * passports projection when it knows the passport (an upgrade or a revocation after the
 * registration), else from the message. Pending claims stay (their
 * workflows write their rows when they finish); a replayed entry that collides with one is kept
 * out until then. Returns how many rows were written and how many of them are active.
 */
export async function replaceDirectory(sql: Sql, agents: readonly ReplayedAgent[], throughSequence: number): Promise<{ written: number; active: number }> {
  return sql.begin(async (tx) => {
    // what probes found (liveness, card verification: not on the topic) is kept across the replay, the
    // card's verification only for the same card URL
    await tx`
      create temp table kept_liveness on commit drop as
        select did, agent_card, probed_at, last_seen_at, online, stale, card_verified, card_verification from agents
         where status = 'registered' and (directory_sequence is null or directory_sequence <= ${throughSequence})`;
    // rows of registrations the replay did not read (recorded after the topic was read) stay
    await tx`delete from agents where status = 'registered' and (directory_sequence is null or directory_sequence <= ${throughSequence})`;
    let written = 0;
    const BATCH = 5000;
    for (let i = 0; i < agents.length; i += BATCH) {
      const rows = agents.slice(i, i + BATCH).map(({ message: m, sequence, network }) => ({
        did: m.did,
        network,
        account_id: m.accountId,
        token_id: m.tokenId,
        serial: m.serial,
        name: m.name,
        capabilities: JSON.stringify(m.capabilities),
        skills: m.skills ? JSON.stringify(m.skills) : null,
        endpoint: m.endpoint,
        description: m.description ?? null,
        agent_card: m.agentCard ?? null,
        tier: m.tier,
        registered_at: new Date(m.timestamp),
        directory_sequence: sequence,
      }));
      const r = await tx`
        insert into agents (did, network, account_id, token_id, serial, name, capabilities, skills, endpoint, description,
                            agent_card, tier, registered_at, active, status, directory_sequence)
        select x.did, x.network, x.account_id, x.token_id, x.serial, x.name, x.capabilities::jsonb, x.skills::jsonb,
               x.endpoint, x.description, x.agent_card, coalesce(p.tier, x.tier), x.registered_at,
               p.revoked_at is null, 'registered', x.directory_sequence
          from json_to_recordset(${tx.json(rows as never)}::json) as x(
                 did text, network text, account_id text, token_id text, serial bigint, name text, capabilities text,
                 skills text, endpoint text, description text, agent_card text, tier text, registered_at timestamptz,
                 directory_sequence bigint)
          left join passports p on p.token_id = x.token_id and p.serial = x.serial
        on conflict do nothing
        returning did`;
      written += r.length;
    }
    await tx`
      update agents a set probed_at = k.probed_at, last_seen_at = k.last_seen_at, online = k.online, stale = k.stale,
             card_verified = k.card_verified and a.agent_card is not distinct from k.agent_card,
             card_verification = case when a.agent_card is not distinct from k.agent_card then k.card_verification end
        from kept_liveness k
       where a.did = k.did and a.status = 'registered'`;
    const [{ n }] = await tx<{ n: bigint }[]>`select count(*)::bigint as n from agents where status = 'registered' and active`;
    await notifyChange(tx, CHANNELS.agent, RELOAD_ALL);
    return { written, active: Number(n) };
  }) as Promise<{ written: number; active: number }>;
}

// ------------------------------------------------------------------ liveness (issue 29 item 6)

/** An active entry due for a probe (workflows/directoryProbe.ts). */
export interface ProbeDueRow {
  did: string;
  account_id: string;
  endpoint: string;
  agent_card: string | null;
}

/** Active registered entries of `network` not probed for `everyMs`: never probed first, then the longest ago; at most `limit`. */
export async function listProbeDue(sql: Sql, network: string, everyMs: number, limit: number): Promise<ProbeDueRow[]> {
  return sql<ProbeDueRow[]>`
    select did, account_id, endpoint, agent_card from agents
     where status = 'registered' and active and network = ${network}
       and (probed_at is null or probed_at <= now() - make_interval(secs => ${everyMs / 1000}))
     order by probed_at nulls first, directory_sequence
     limit ${limit}`;
}

export interface ProbeRecord {
  did: string;
  online: boolean;
  /** set when the card was fetched and checked again */
  card?: { cardVerified: boolean; cardVerification: string };
  staleAfterMs: number;
}

/**
 * Writes what a probe found and announces the entry: online, last seen now when online, stale when
 * not seen (since its registration if never) for `staleAfterMs`; the card's verification when it was
 * checked again.
 */
export async function recordProbe(sql: Sql, p: ProbeRecord): Promise<void> {
  await sql.begin(async (tx) => {
    const rows = await tx`
      update agents set
        probed_at = now(),
        online = ${p.online},
        last_seen_at = case when ${p.online} then now() else last_seen_at end,
        stale = not ${p.online} and coalesce(last_seen_at, registered_at, created_at) <= now() - make_interval(secs => ${p.staleAfterMs / 1000}),
        card_verified = coalesce(${p.card?.cardVerified ?? null}::boolean, card_verified),
        card_verification = coalesce(${p.card?.cardVerification ?? null}::text, card_verification)
       where did = ${p.did} and status = 'registered'
      returning did`;
    if (rows.length === 1) await notifyChange(tx, CHANNELS.agent, p.did);
  });
}

/**
 * Bulk form of recordRegisteredAgent for `npm run seed` (scripts/seed.ts): one multi-row insert
 * (active from the passports projection, as replaceDirectory does), rows already present (same DID
 * or name) left as they are, and one NOTIFY RELOAD_ALL for the batch. Returns how many were new.
 */
export async function recordRegisteredAgentsBulk(sql: Sql, agents: readonly RegisteredAgent[]): Promise<number> {
  if (agents.length === 0) return 0;
  return sql.begin(async (tx) => {
    const rows = agents.map(({ message: m, network, directorySequence, directoryTransactionId, auditTransactionId, workflowId }) => ({
      did: m.did,
      network,
      account_id: m.accountId,
      token_id: m.tokenId,
      serial: m.serial,
      name: m.name,
      capabilities: JSON.stringify(m.capabilities),
      skills: m.skills ? JSON.stringify(m.skills) : null,
      endpoint: m.endpoint,
      description: m.description ?? null,
      agent_card: m.agentCard ?? null,
      tier: m.tier,
      registered_at: new Date(m.timestamp),
      directory_sequence: directorySequence,
      directory_transaction_id: directoryTransactionId,
      audit_transaction_id: auditTransactionId,
      workflow_id: workflowId,
    }));
    const inserted = await tx`
      insert into agents (did, network, account_id, token_id, serial, name, capabilities, skills, endpoint, description,
                          agent_card, tier, registered_at, active, status, directory_sequence, directory_transaction_id,
                          audit_transaction_id, workflow_id)
      select x.did, x.network, x.account_id, x.token_id, x.serial, x.name, x.capabilities::jsonb, x.skills::jsonb,
             x.endpoint, x.description, x.agent_card, x.tier, x.registered_at, coalesce(p.revoked_at is null, true),
             'registered', x.directory_sequence, x.directory_transaction_id, x.audit_transaction_id, x.workflow_id
        from json_to_recordset(${tx.json(rows as never)}::json) as x(
               did text, network text, account_id text, token_id text, serial bigint, name text, capabilities text,
               skills text, endpoint text, description text, agent_card text, tier text, registered_at timestamptz,
               directory_sequence bigint, directory_transaction_id text, audit_transaction_id text, workflow_id text)
        left join passports p on p.token_id = x.token_id and p.serial = x.serial
      on conflict do nothing
      returning did`;
    if (inserted.length > 0) await notifyChange(tx, CHANNELS.agent, RELOAD_ALL);
    return inserted.length;
  }) as Promise<number>;
}
