/**
 * The agent directory (SPEC 2 "Agent directory entry", 4.2; DESIGN.md sections 6 and 10): the
 * versioned directory topic message, the rules a registration must satisfy, and the in-memory index
 * each API process answers GET /agents from. Pure: no I/O.
 */
import { CAPABILITIES, isCapability, type Capability } from './capabilities.js';
import { isTier, type Tier } from './tiers.js';
import type { CardVerificationReason } from './agentCardSignature.js';

/** Bounds of a registration (DESIGN.md section 10). */
export const DIRECTORY_LIMITS = {
  nameMin: 1,
  nameMax: 64,
  skillsMax: 20,
  skillMax: 48,
  descriptionMax: 1000,
  urlMax: 512,
} as const;

/** One directory entry as the API serves it (SPEC 2), plus the optional registration fields. */
export interface AgentEntry {
  did: string;
  tokenId: string;
  serial: number;
  accountId: string;
  name: string;
  capabilities: Capability[];
  endpoint: string;
  tier: Tier;
  /** registration time, Unix milliseconds */
  timestamp: number;
  active: boolean;
  skills?: string[];
  description?: string;
  agentCard?: string;
  /** liveness (issue 29 item 6): what the last probe found; null before the first probe */
  online?: boolean | null;
  /** the last probe the endpoint or card answered, Unix milliseconds; null: never */
  lastSeenAt?: number | null;
  /** not seen for DIRECTORY_STALE_AFTER_S */
  stale?: boolean;
  /** the agent card carries a signature by the DID's account key (issue 29 item 5) */
  cardVerified?: boolean;
  /** why (domain/agentCardSignature.ts CARD_VERIFICATION_REASONS) */
  cardVerification?: CardVerificationReason;
}

/** An entry with its place in the directory (the topic sequence number of its registration). */
export interface IndexedAgent {
  entry: AgentEntry;
  sequence: number;
}

/** An indexed entry with what the filters compare, computed once. */
interface Item extends IndexedAgent {
  nameLower: string;
  skillsLower: readonly string[];
  /** bit i set: CAPABILITIES[i] */
  capMask: number;
}

function capBit(c: Capability): number {
  return 1 << CAPABILITIES.indexOf(c);
}

function itemOf(entry: AgentEntry, sequence: number): Item {
  let capMask = 0;
  for (const c of entry.capabilities) capMask |= capBit(c);
  return { entry, sequence, nameLower: entry.name.toLowerCase(), skillsLower: [...new Set((entry.skills ?? []).map((x) => x.toLowerCase()))], capMask };
}

/** The directory topic message of a registration (versioned JSON, ids only, never a key). */
export interface AgentRegisteredMessage {
  v: 1;
  type: 'agent.registered';
  did: string;
  accountId: string;
  tokenId: string;
  serial: number;
  name: string;
  capabilities: Capability[];
  endpoint: string;
  tier: Tier;
  timestamp: number;
  skills?: string[];
  description?: string;
  agentCard?: string;
}

/**
 * Largest directory message: one topic chunk (1024 bytes, as on Hedera). A registration is written
 * as a single transaction through the idempotent submitter, which retries single transactions
 * safely (docs/decisions.md: chunked messages are not submitted through it), and the rebuild never
 * waits on a chunk group that did not complete.
 */
export const DIRECTORY_MESSAGE_MAX_BYTES = 1024;

/** UTF-8 size of a directory message as it will be written (timestamps have 13 digits until 2286). */
export function directoryMessageBytes(m: Omit<AgentRegisteredMessage, 'timestamp'>): number {
  return new TextEncoder().encode(JSON.stringify({ ...m, timestamp: 1_000_000_000_000 })).length;
}

/** The audit topic message of a registration (DESIGN.md section 6: agent.registered). */
export interface AgentAuditEvent {
  v: 1;
  type: 'agent.registered';
  did: string;
  tokenId: string;
  serial: number;
  tier: Tier;
  timestamp: number;
}

/** The case-insensitive key names are unique under. */
export function nameKey(name: string): string {
  return name.trim().toLowerCase();
}

/** Requested capabilities outside the passport's, in catalog order. */
export function capabilitiesOutsidePassport(requested: readonly string[], passport: readonly string[]): string[] {
  return [...new Set(requested)].filter((c) => !passport.includes(c));
}

/** The capabilities in catalog order without duplicates. */
export function normaliseCapabilities(requested: readonly Capability[]): Capability[] {
  return CAPABILITIES.filter((c) => requested.includes(c));
}

/** Skills trimmed, without empty or (case-insensitively) repeated ones. */
export function normaliseSkills(skills: readonly string[]): string[] {
  const seen = new Set<string>();
  const out: string[] = [];
  for (const s of skills) {
    const t = s.trim();
    if (!t || seen.has(t.toLowerCase())) continue;
    seen.add(t.toLowerCase());
    out.push(t);
  }
  return out;
}

const DID_FIELDS = ['did', 'id'] as const;

/**
 * The DID an A2A agent card names, if any: its `did` field, or its `id` when that is a DID. A card
 * naming no DID says nothing about ownership and is accepted; one naming another DID is a conflict.
 */
export function cardDid(card: unknown): string | null {
  if (!card || typeof card !== 'object' || Array.isArray(card)) return null;
  const c = card as Record<string, unknown>;
  for (const f of DID_FIELDS) {
    const v = c[f];
    if (typeof v === 'string' && v.startsWith('did:')) return v;
  }
  return null;
}

function isStringArray(v: unknown, max: number, itemMax: number): v is string[] {
  return Array.isArray(v) && v.length <= max && v.every((x) => typeof x === 'string' && x.length > 0 && x.length <= itemMax);
}

/**
 * Parses a directory topic message; null for anything that is not a well-formed v1
 * agent.registered message (the rebuild skips those and counts them).
 */
export function parseDirectoryMessage(text: string): AgentRegisteredMessage | null {
  let m: Record<string, unknown>;
  try {
    const parsed: unknown = JSON.parse(text);
    if (!parsed || typeof parsed !== 'object' || Array.isArray(parsed)) return null;
    m = parsed as Record<string, unknown>;
  } catch {
    return null;
  }
  if (m.v !== 1 || m.type !== 'agent.registered') return null;
  const str = (k: string, max: number) => typeof m[k] === 'string' && (m[k] as string).length > 0 && (m[k] as string).length <= max;
  if (!str('did', 128) || !str('accountId', 32) || !str('tokenId', 32) || !str('endpoint', DIRECTORY_LIMITS.urlMax)) return null;
  if (!str('name', DIRECTORY_LIMITS.nameMax)) return null;
  if (typeof m.serial !== 'number' || !Number.isSafeInteger(m.serial) || m.serial <= 0) return null;
  if (typeof m.timestamp !== 'number' || !Number.isFinite(m.timestamp)) return null;
  if (typeof m.tier !== 'string' || !isTier(m.tier)) return null;
  if (!Array.isArray(m.capabilities) || !m.capabilities.every((c) => typeof c === 'string' && isCapability(c))) return null;
  if (m.skills !== undefined && !isStringArray(m.skills, DIRECTORY_LIMITS.skillsMax, DIRECTORY_LIMITS.skillMax)) return null;
  if (m.description !== undefined && !str('description', DIRECTORY_LIMITS.descriptionMax)) return null;
  if (m.agentCard !== undefined && !str('agentCard', DIRECTORY_LIMITS.urlMax)) return null;
  const out: AgentRegisteredMessage = {
    v: 1,
    type: 'agent.registered',
    did: m.did as string,
    accountId: m.accountId as string,
    tokenId: m.tokenId as string,
    serial: m.serial,
    name: m.name as string,
    capabilities: normaliseCapabilities(m.capabilities as Capability[]),
    endpoint: m.endpoint as string,
    tier: m.tier,
    timestamp: m.timestamp,
  };
  if (m.skills !== undefined) out.skills = m.skills as string[];
  if (m.description !== undefined) out.description = m.description as string;
  if (m.agentCard !== undefined) out.agentCard = m.agentCard as string;
  return out;
}

/**
 * Replays directory messages in topic order: the first registration of a DID wins, and a later
 * registration whose name (case-insensitively) is taken by another DID is skipped, exactly the
 * rules the API enforces, so a replay gives the entries the API accepted.
 */
export function replayDirectory(messages: readonly { sequence: number; message: AgentRegisteredMessage }[]): {
  entries: { sequence: number; message: AgentRegisteredMessage }[];
  skipped: number;
} {
  const dids = new Set<string>();
  const names = new Set<string>();
  const entries: { sequence: number; message: AgentRegisteredMessage }[] = [];
  let skipped = 0;
  for (const m of [...messages].sort((a, b) => a.sequence - b.sequence)) {
    const key = nameKey(m.message.name);
    if (dids.has(m.message.did) || names.has(key)) {
      skipped++;
      continue;
    }
    dids.add(m.message.did);
    names.add(key);
    entries.push(m);
  }
  return { entries, skipped };
}

export interface DirectoryQuery {
  capability?: Capability;
  /** only entries the last probe found online (true) or not (false: offline or not probed yet) */
  online?: boolean;
  /** one skill, matched case-insensitively */
  skill?: string;
  /** case-insensitive substring of the name */
  name?: string;
  limit: number;
  offset: number;
}

function compare(a: IndexedAgent, b: IndexedAgent): number {
  return a.sequence - b.sequence || (a.entry.did < b.entry.did ? -1 : a.entry.did > b.entry.did ? 1 : 0);
}

/** Inserts into a list kept in directory order (binary search; registrations usually append). */
function insertSorted(list: Item[], item: Item): void {
  let lo = 0;
  let hi = list.length;
  if (hi === 0 || compare(list[hi - 1]!, item) < 0) {
    list.push(item);
    return;
  }
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (compare(list[mid]!, item) < 0) lo = mid + 1;
    else hi = mid;
  }
  list.splice(lo, 0, item);
}

function removeFrom(list: Item[], item: Item): void {
  const i = list.indexOf(item);
  if (i >= 0) list.splice(i, 1);
}

/**
 * The in-memory directory: entries in directory order (oldest registration first), with lists per
 * capability and per skill so filtered pages are answered without scanning everything; the name
 * filter scans the smallest candidate list with precomputed lower-case names.
 */
export class DirectoryIndex {
  private readonly byDid = new Map<string, Item>();
  private readonly all: Item[] = [];
  private readonly byCapability = new Map<Capability, Item[]>();
  private readonly bySkill = new Map<string, Item[]>();
  /**
   * Every lower-cased name in directory order, joined by NUL, and where each starts: a name
   * substring search is then one native indexOf sweep instead of a loop over the entries. Built
   * on the first name query after a change.
   */
  private names: { text: string; starts: Int32Array } | null = null;

  get size(): number {
    return this.all.length;
  }

  get(did: string): AgentEntry | undefined {
    return this.byDid.get(did)?.entry;
  }

  private add(item: Item, sorted: boolean): void {
    this.names = null;
    const put = sorted ? (list: Item[]) => insertSorted(list, item) : (list: Item[]) => list.push(item);
    this.byDid.set(item.entry.did, item);
    put(this.all);
    for (const c of item.entry.capabilities) {
      let list = this.byCapability.get(c);
      if (!list) this.byCapability.set(c, (list = []));
      put(list);
    }
    for (const s of item.skillsLower) {
      let list = this.bySkill.get(s);
      if (!list) this.bySkill.set(s, (list = []));
      put(list);
    }
  }

  /** Adds or replaces the entry of a DID. */
  upsert(entry: AgentEntry, sequence: number): void {
    this.remove(entry.did);
    this.add(itemOf(entry, sequence), true);
  }

  remove(did: string): void {
    const item = this.byDid.get(did);
    if (!item) return;
    this.names = null;
    this.byDid.delete(did);
    removeFrom(this.all, item);
    for (const c of item.entry.capabilities) removeFrom(this.byCapability.get(c) ?? [], item);
    for (const s of item.skillsLower) {
      const list = this.bySkill.get(s);
      if (!list) continue;
      removeFrom(list, item);
      if (list.length === 0) this.bySkill.delete(s);
    }
  }

  /** Replaces everything (a reload or a rebuild). */
  replaceAll(items: readonly { entry: AgentEntry; sequence: number }[]): void {
    this.byDid.clear();
    this.all.length = 0;
    this.byCapability.clear();
    this.bySkill.clear();
    const sorted = items.map((i) => itemOf(i.entry, i.sequence)).sort(compare);
    for (const item of sorted) this.add(item, false); // sorted input: plain appends
  }

  /** The entries whose lower-cased name contains `needle`, in directory order. */
  private nameMatches(needle: string): Item[] {
    if (needle.includes('\0')) return [];
    if (!this.names) {
      const starts = new Int32Array(this.all.length + 1);
      let pos = 0;
      for (let i = 0; i < this.all.length; i++) {
        starts[i] = pos;
        pos += this.all[i]!.nameLower.length + 1;
      }
      starts[this.all.length] = pos;
      this.names = { text: this.all.map((i) => i.nameLower).join('\0'), starts };
    }
    const { text, starts } = this.names;
    const out: Item[] = [];
    let from = 0;
    for (;;) {
      const at = text.indexOf(needle, from);
      if (at < 0) break;
      // the entry whose name holds position `at` (last start <= at)
      let lo = 0;
      let hi = this.all.length - 1;
      while (lo < hi) {
        const mid = (lo + hi + 1) >>> 1;
        if (starts[mid]! <= at) lo = mid;
        else hi = mid - 1;
      }
      out.push(this.all[lo]!);
      from = starts[lo + 1]!; // next name
    }
    return out;
  }

  /** One page of the entries matching every given filter, and how many match in total. */
  query(q: DirectoryQuery): { agents: AgentEntry[]; total: number } {
    const skill = q.skill?.trim().toLowerCase();
    const name = q.name?.trim().toLowerCase();
    const lists: Item[][] = [];
    if (q.capability) lists.push(this.byCapability.get(q.capability) ?? []);
    if (skill !== undefined) lists.push(this.bySkill.get(skill) ?? []);
    if (name) lists.push(this.nameMatches(name));
    const base = lists.length === 0 ? this.all : lists.reduce((a, b) => (b.length < a.length ? b : a));
    const online = q.online;
    if (lists.length <= 1 && online === undefined) {
      return { agents: base.slice(q.offset, q.offset + q.limit).map((i) => i.entry), total: base.length };
    }
    const mask = q.capability ? capBit(q.capability) : 0;
    const agents: AgentEntry[] = [];
    let total = 0;
    const end = q.offset + q.limit;
    for (const item of base) {
      if ((item.capMask & mask) !== mask) continue;
      if (skill !== undefined && !item.skillsLower.includes(skill)) continue;
      if (name && !item.nameLower.includes(name)) continue;
      if (online !== undefined && (item.entry.online === true) !== online) continue;
      if (total >= q.offset && total < end) agents.push(item.entry);
      total++;
    }
    return { agents, total };
  }
}
