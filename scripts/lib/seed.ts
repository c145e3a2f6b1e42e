/**
 * The dataset of `npm run seed` (scripts/seed.ts; issue 31): passports, directory entries and
 * marketplace tasks written through the projections' own bulk writers (db/queries: one multi-row
 * insert and one NOTIFY RELOAD_ALL per batch, so every running API process reloads its memory once
 * per batch instead of once per row).
 *
 * Every row is a function of its kind and index only (ids, names, statuses, times), so a seed of the
 * same size writes nothing the second time, and a bigger seed adds just the rows the smaller one had
 * not written. Agent i: account 0.0.(SEED_ACCOUNT_BASE + i), passport SEED_TOKEN_ID serial i + 1,
 * name `<adjective>-<noun>-<i>`. Task j of a kind (open, closed): a UUIDv7 id from its creation time
 * (counted back from SEED_END_MS, open tasks a minute apart, closed ones 20 s apart, so the newest
 * tasks mix both) and a hash of (kind, j); posters and claimers are the gold and platinum agents.
 *
 * Seeded tasks have no workflow: they are fixtures for reads (lists, search, pages), not tasks to
 * claim. The escrow reconciler treats an open one whose workflow it cannot find as stranded and
 * closes it after ESCROW_RECONCILE_GRACE_S, a sample per pass.
 */
import { createHash } from 'node:crypto';
import type { Sql } from 'postgres';
import { recordRegisteredAgentsBulk, type RegisteredAgent } from '../../db/queries/agents.js';
import { insertTasksBulk } from '../../db/queries/marketTasks.js';
import { recordIssuedPassportsBulk, type NewPassport } from '../../db/queries/passports.js';
import { CAPABILITIES, type Capability } from '../../domain/capabilities.js';
import { postedTask, type TaskRecord, type TaskStatus } from '../../domain/market.js';
import { TIER_CATALOG, type Tier } from '../../domain/tiers.js';

export interface SeedSize {
  agents: number;
  openTasks: number;
  closedTasks: number;
}

export const SEED_ACCOUNT_BASE = 8_000_000;
export const SEED_TOKEN_ID = '0.0.7999999';
export const SEED_NETWORK = 'local';
/** Seeded tasks are created before this instant (2026-01-01), newest first from it. */
export const SEED_END_MS = Date.UTC(2026, 0, 1);
const BATCH = 5_000;

const TIER_CYCLE: readonly Tier[] = ['gold', 'platinum', 'silver', 'gold', 'bronze', 'platinum', 'gold', 'silver', 'gold', 'platinum'];
const ADJECTIVES = ['amber', 'brisk', 'cobalt', 'deft', 'eager', 'fabled', 'gentle', 'hardy', 'ivory', 'jolly', 'keen', 'lucid', 'mellow', 'nimble', 'opal', 'prime', 'quiet', 'rapid', 'solar', 'tidal'];
const NOUNS = ['oracle', 'scout', 'courier', 'ledger', 'weaver', 'falcon', 'harbor', 'beacon', 'summit', 'lantern', 'compass', 'anchor', 'meadow', 'pilot', 'quill', 'relay'];
const SKILLS = ['weather', 'translation', 'ocr', 'pricing', 'geocoding', 'summaries', 'sentiment', 'routing', 'forecasting', 'scraping', 'invoices', 'audio', 'vision', 'search', 'scheduling', 'compliance'];
const VERBS = ['Translate', 'Summarise', 'Classify', 'Forecast', 'Transcribe', 'Verify', 'Extract', 'Price', 'Geocode', 'Review'];
const OBJECTS = ['product catalogue', 'support tickets', 'weather feed', 'invoice batch', 'podcast episode', 'shipping manifest', 'legal memo', 'sensor log', 'market report', 'photo set'];

export const seedAccountId = (i: number): string => `0.0.${SEED_ACCOUNT_BASE + i}`;
export const seedDid = (i: number): string => `did:hedera:${SEED_NETWORK}:${seedAccountId(i)}`;
export const seedTier = (i: number): Tier => TIER_CYCLE[i % TIER_CYCLE.length]!;
export const seedAgentName = (i: number): string => `${ADJECTIVES[i % ADJECTIVES.length]}-${NOUNS[Math.floor(i / ADJECTIVES.length) % NOUNS.length]}-${i}`;
const isMarketTier = (t: Tier) => t === 'gold' || t === 'platinum';

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

/** A UUIDv7 of a creation time, its random bits from a hash of `key` (deterministic). */
export function seedUuidV7(ms: number, key: string): string {
  const b = digest(key);
  const t = BigInt(ms);
  for (let i = 0; i < 6; i++) b[i] = Number((t >> BigInt(8 * (5 - i))) & 0xffn);
  b[6] = 0x70 | (b[6]! & 0x0f);
  b[8] = 0x80 | (b[8]! & 0x3f);
  const h = b.subarray(0, 16).toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20, 32)}`;
}

function capabilitiesOf(tier: Tier, i: number): Capability[] {
  const allowed = TIER_CATALOG.find((e) => e.name === tier)!.capabilities;
  const n = 1 + (i % allowed.length);
  return allowed.slice(0, n);
}

export function seedPassport(i: number): NewPassport {
  const tier = seedTier(i);
  return {
    network: SEED_NETWORK,
    tokenId: SEED_TOKEN_ID,
    serial: i + 1,
    accountId: seedAccountId(i),
    did: seedDid(i),
    tier,
    capabilities: TIER_CATALOG.find((e) => e.name === tier)!.capabilities,
    endpoint: `https://seed-agents.example/${i}`,
    issuedAtMs: SEED_END_MS - 90 * 86_400_000 + i * 1_000,
    paymentTransactionId: `seed-payment-${i}`,
    mintTransactionId: `seed-mint-${i}`,
    workflowId: `seed-passport-${i}`,
  };
}

export function seedAgent(i: number): RegisteredAgent {
  const tier = seedTier(i);
  const skills = [SKILLS[i % SKILLS.length]!, ...(i % 3 === 0 ? [SKILLS[(i * 7 + 3) % SKILLS.length]!] : [])];
  return {
    message: {
      v: 1,
      type: 'agent.registered',
      did: seedDid(i),
      accountId: seedAccountId(i),
      tokenId: SEED_TOKEN_ID,
      serial: i + 1,
      name: seedAgentName(i),
      capabilities: capabilitiesOf(tier, i),
      endpoint: `https://seed-agents.example/${i}`,
      tier,
      timestamp: SEED_END_MS - 60 * 86_400_000 + i * 1_000,
      skills: [...new Set(skills)],
      description: `Seeded ${tier} agent offering ${skills.join(' and ')}`,
    },
    network: SEED_NETWORK,
    directorySequence: 1_000_000_000 + i,
    directoryTransactionId: `seed-directory-${i}`,
    auditTransactionId: `seed-audit-${i}`,
    workflowId: `seed-agent-${i}`,
  };
}

const OPEN_CYCLE: readonly TaskStatus[] = ['posted', 'posted', 'posted', 'claimed', 'posted', 'delivered', 'posted', 'claimed', 'posted', 'claimed'];
const CLOSED_CYCLE: readonly TaskStatus[] = ['completed', 'completed', 'cancelled', 'completed', 'completed', 'cancelled', 'completed', 'completed', 'cancelled', 'completed'];

/** Task j of a kind; `market` are the agent indexes that may post and claim (gold, platinum). */
export function seedTask(kind: 'open' | 'closed', j: number, market: readonly number[]): { task: TaskRecord; seq: number } {
  const createdMs = kind === 'open' ? SEED_END_MS - 60_000 * (j + 1) : SEED_END_MS - 20_000 * (j + 1) - 7_000;
  const at = new Date(createdMs).toISOString();
  const poster = market[(j * 7919 + (kind === 'open' ? 0 : 1)) % market.length]!;
  let claimer = market[(j * 104_729 + 13) % market.length]!;
  if (claimer === poster) claimer = market[(market.indexOf(poster) + 1) % market.length]!;
  const price = 1 + ((j * 37) % 200) / 4;
  const caps = [CAPABILITIES[j % CAPABILITIES.length]!, ...(j % 4 === 0 ? [CAPABILITIES[(j + 2) % CAPABILITIES.length]!] : [])];
  const verb = VERBS[j % VERBS.length]!;
  const object = OBJECTS[Math.floor(j / VERBS.length) % OBJECTS.length]!;
  const base = postedTask(
    {
      taskId: seedUuidV7(createdMs, `seed-task:${kind}:${j}`),
      title: `${verb} the ${object} #${kind === 'open' ? 'o' : 'c'}${j}`,
      description: `${verb} the ${object} for a seeded poster (${kind} task ${j}); answer as JSON.`,
      priceHbar: price,
      priceTinybars: String(BigInt(Math.round(price * 1e8))),
      capabilities: [...new Set(caps)],
      posterDid: seedDid(poster),
      verifierType: 'none',
      verifierConfig: null,
      deadline: null,
      feeBps: 100,
      escrow: false,
    },
    at,
  );
  const status = (kind === 'open' ? OPEN_CYCLE : CLOSED_CYCLE)[j % 10]!;
  const later = new Date(createdMs + 3_600_000).toISOString();
  const task: TaskRecord = { ...base, status, updatedAt: status === 'posted' ? at : later };
  const delivered = status === 'delivered' || status === 'completed' || (status === 'cancelled' && j % 3 === 0);
  if (status !== 'posted' && (status !== 'cancelled' || delivered)) task.claimerDid = seedDid(claimer);
  if (delivered) {
    task.resultBody = `{"seeded":${j}}`;
    task.resultSha256 = digest(task.resultBody).toString('hex');
    task.deliveredAt = later;
  }
  if (status === 'completed') task.paymentTxId = `0.0.2@${Math.floor(createdMs / 1000) + 3600}.${String(j % 1e9).padStart(9, '0')}`;
  const seq = { posted: 1, claimed: 2, delivered: 3, completed: 4, cancelled: delivered ? 4 : 2 }[status];
  return { task, seq };
}

/** Writes the dataset (missing rows only); `log` gets one line per phase. Returns what was new. */
export async function seedDatabase(sql: Sql, size: SeedSize, log: (line: string) => void = () => {}): Promise<{ passports: number; agents: number; tasks: number }> {
  const out = { passports: 0, agents: 0, tasks: 0 };
  const phase = async (name: string, n: number, write: (from: number, to: number) => Promise<number>): Promise<number> => {
    const started = Date.now();
    let fresh = 0;
    for (let from = 0; from < n; from += BATCH) fresh += await write(from, Math.min(n, from + BATCH));
    log(`${name}: ${n} (${fresh} new) in ${((Date.now() - started) / 1000).toFixed(1)} s`);
    return fresh;
  };
  const range = (from: number, to: number) => Array.from({ length: to - from }, (_, k) => from + k);
  out.passports = await phase('passports', size.agents, (from, to) => recordIssuedPassportsBulk(sql, range(from, to).map(seedPassport)));
  out.agents = await phase('directory entries', size.agents, (from, to) => recordRegisteredAgentsBulk(sql, range(from, to).map(seedAgent)));
  const market = range(0, size.agents).filter((i) => isMarketTier(seedTier(i)));
  if (size.openTasks + size.closedTasks > 0 && market.length < 2) throw new Error('tasks need at least two gold or platinum agents: seed at least 2 agents');
  out.tasks += await phase('open tasks', size.openTasks, (from, to) => insertTasksBulk(sql, range(from, to).map((j) => seedTask('open', j, market))));
  out.tasks += await phase('closed tasks', size.closedTasks, (from, to) => insertTasksBulk(sql, range(from, to).map((j) => seedTask('closed', j, market))));
  return out;
}

/**
 * Why this database must not be seeded, or null. Refused: NODE_ENV=production; a server that is not
 * on this machine (loopback or a Unix socket) unless `allowRemoteHost`; a database holding passports
 * of a real Hedera network (anything but 'local').
 */
export async function seedRefusal(sql: Sql, databaseUrl: string, env: NodeJS.ProcessEnv, allowRemoteHost = false): Promise<string | null> {
  if (env.NODE_ENV === 'production') return 'NODE_ENV is production: the seed writes fixtures into development databases only';
  const host = new URL(databaseUrl).hostname.replace(/^\[|\]$/g, '');
  const local = host === '' || host === 'localhost' || host === '::1' || /^127\./.test(host) || host.startsWith('/');
  if (!local && !allowRemoteHost) return `the database is on ${host}, not on this machine: pass --allow-remote-host if it is a development database`;
  const [real] = await sql<{ network: string }[]>`select network from passports where network <> ${SEED_NETWORK} limit 1`;
  if (real) return `the database holds passports on ${real.network}: it looks like a production database`;
  return null;
}
