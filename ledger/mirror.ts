// Typed client of the mirror node REST API (the subset the service reads). Base URL includes /api/v1,
// e.g. https://testnet.mirrornode.hedera.com/api/v1 or the localnet's http://127.0.0.1:5551/api/v1.
//
// Endpoints used (mirror node JSON shapes):
//   GET /accounts/{id}                         account, balance, key, max_automatic_token_associations
//   GET /accounts/{id}/nfts                    NFTs owned by an account
//   GET /accounts/{id}/tokens?token.id=        token relationships (association, automatic_association)
//   GET /tokens/{id}/nfts                      NFTs of a collection
//   GET /tokens/{id}/nfts/{serial}             one NFT
//   GET /topics/{id}/messages                  topic messages, paged through links.next
//   GET /transactions/{id}                     transactions by transaction id (0.0.x-sss-nnn)
//   GET /schedules/{id}                        a schedule
import { LedgerError } from './errors.js';
import { withSpan } from '../telemetry/spans.js';
import type { MirrorKey } from '@agent-passport/core/keys';

export interface MirrorLinks {
  next: string | null;
}

export interface MirrorAccount {
  account: string;
  alias?: string | null;
  evm_address?: string | null;
  deleted?: boolean;
  key: MirrorKey | null;
  max_automatic_token_associations?: number;
  balance: { balance: number | string; timestamp?: string | null; tokens?: { token_id: string; balance: number | string }[] };
  [k: string]: unknown;
}

export interface MirrorNft {
  account_id: string | null;
  created_timestamp?: string | null;
  deleted: boolean;
  metadata: string; // base64
  modified_timestamp?: string | null;
  serial_number: number;
  token_id: string;
  spender?: string | null;
  [k: string]: unknown;
}

export interface MirrorTokenRelationship {
  token_id: string;
  automatic_association?: boolean;
  balance?: number | string;
  freeze_status?: string;
  kyc_status?: string;
  created_timestamp?: string;
  [k: string]: unknown;
}

export interface MirrorChunkInfo {
  initial_transaction_id: { account_id: string; nonce?: number; scheduled?: boolean; transaction_valid_start: string };
  number: number;
  total: number;
}

export interface MirrorTopicMessage {
  chunk_info?: MirrorChunkInfo | null;
  consensus_timestamp: string;
  message: string; // base64
  payer_account_id: string;
  running_hash?: string;
  running_hash_version?: number;
  sequence_number: number;
  topic_id: string;
}

export interface MirrorTransfer {
  account: string;
  amount: number | string;
  is_approval?: boolean;
}

export interface MirrorTransaction {
  consensus_timestamp: string;
  name: string;
  result: string;
  transaction_id: string;
  scheduled?: boolean;
  nonce?: number;
  charged_tx_fee?: number | string;
  max_fee?: string;
  valid_start_timestamp?: string;
  valid_duration_seconds?: string;
  entity_id?: string | null;
  node?: string | null;
  transfers?: MirrorTransfer[];
  token_transfers?: { token_id: string; account: string; amount: number | string; is_approval?: boolean }[];
  nft_transfers?: { token_id: string; sender_account_id: string | null; receiver_account_id: string | null; serial_number: number; is_approval?: boolean }[];
  [k: string]: unknown;
}

export interface MirrorSchedule {
  schedule_id: string;
  admin_key?: MirrorKey | null;
  consensus_timestamp?: string;
  creator_account_id?: string;
  payer_account_id?: string;
  deleted: boolean;
  executed_timestamp?: string | null;
  expiration_time?: string | null;
  memo?: string;
  signatures?: { consensus_timestamp?: string; public_key_prefix: string; signature: string; type?: string }[];
  transaction_body?: string;
  wait_for_expiry?: boolean;
  [k: string]: unknown;
}

/** A topic message with its chunks joined. */
export interface JoinedTopicMessage {
  topicId: string;
  /** sequence number of the first chunk */
  sequenceNumber: number;
  /** sequence number of the last chunk (equals sequenceNumber when unchunked) */
  lastSequenceNumber: number;
  /** consensus timestamp of the last chunk: when the whole message became available */
  consensusTimestamp: string;
  payerAccountId: string;
  /** transaction id of the first chunk (mirror format 0.0.x-sss-nnn), when chunked */
  initialTransactionId?: string;
  chunks: number;
  message: Uint8Array;
  text(): string;
}

export interface MirrorClientOptions {
  /** request timeout per call (default 10 s) */
  timeoutMs?: number;
  fetch?: typeof globalThis.fetch;
}

/** "0.0.2@1700000000.000000123" -> "0.0.2-1700000000-000000123" (the mirror's path format). */
export function toMirrorTransactionId(transactionId: string): string {
  const t = transactionId.trim();
  const m = /^(\d+\.\d+\.\d+)@(\d+)\.(\d+)(?:\?scheduled)?(?:\/(\d+))?$/.exec(t);
  if (!m) return t;
  return `${m[1]}-${m[2]}-${m[3].padEnd(9, '0').slice(0, 9)}`;
}

/** "0.0.2-1700000000-000000123" -> "0.0.2@1700000000.000000123". */
export function fromMirrorTransactionId(mirrorId: string): string {
  const m = /^(\d+\.\d+\.\d+)-(\d+)-(\d+)$/.exec(mirrorId.trim());
  if (!m) return mirrorId;
  return `${m[1]}@${m[2]}.${m[3]}`;
}

export class MirrorClient {
  readonly baseUrl: string;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof globalThis.fetch;

  constructor(baseUrl: string, options: MirrorClientOptions = {}) {
    this.baseUrl = baseUrl.replace(/\/+$/, '');
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.fetchImpl = options.fetch ?? globalThis.fetch;
  }

  private resolve(pathOrLink: string): string {
    if (/^https?:\/\//.test(pathOrLink)) return pathOrLink;
    if (pathOrLink.startsWith('/api/')) return new URL(pathOrLink, this.baseUrl).toString();
    return `${this.baseUrl}${pathOrLink.startsWith('/') ? '' : '/'}${pathOrLink}`;
  }

  /** GET a path (relative to the base) or a links.next value; null on 404. One span `mirror GET` while tracing runs. */
  async get<T>(pathOrLink: string): Promise<T | null> {
    const url = this.resolve(pathOrLink);
    return withSpan('mirror GET', { 'http.request.method': 'GET', 'url.path': new URL(url).pathname }, (span) => this.fetchJson<T>(url, span));
  }

  private async fetchJson<T>(url: string, span?: { setAttribute(key: string, value: number): unknown }): Promise<T | null> {
    let res: Response;
    try {
      res = await this.fetchImpl(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(this.timeoutMs) });
    } catch (err) {
      throw new LedgerError('MIRROR_UNAVAILABLE', `mirror node request failed: ${(err as Error).message}`, { phase: 'mirror', retryable: true, cause: err });
    }
    span?.setAttribute('http.response.status_code', res.status);
    if (res.status === 404) {
      await res.body?.cancel().catch(() => undefined);
      return null;
    }
    if (!res.ok) {
      const retryable = res.status >= 500 || res.status === 429;
      const body = await res.text().catch(() => '');
      throw new LedgerError(retryable ? 'MIRROR_UNAVAILABLE' : 'MIRROR_BAD_REQUEST', `mirror node answered ${res.status} for ${new URL(url).pathname}: ${body.slice(0, 200)}`, {
        phase: 'mirror',
        retryable,
      });
    }
    return (await res.json()) as T;
  }

  /** Follows links.next and collects `key` arrays, up to `max` items. */
  async collect<T>(path: string, key: string, max = 10_000): Promise<T[]> {
    const out: T[] = [];
    let next: string | null = path;
    while (next && out.length < max) {
      const page: (Record<string, unknown> & { links?: MirrorLinks }) | null = await this.get(next);
      if (!page) break;
      const items: T[] = (page[key] as T[] | undefined) ?? [];
      out.push(...items);
      next = items.length > 0 ? (page.links?.next ?? null) : null;
    }
    return out.slice(0, max);
  }

  getAccount(accountId: string): Promise<MirrorAccount | null> {
    return this.get<MirrorAccount>(`/accounts/${encodeURIComponent(accountId)}`);
  }

  /** HBAR balance in tinybars, or null when the account is unknown. */
  async getHbarBalance(accountId: string): Promise<bigint | null> {
    const a = await this.getAccount(accountId);
    return a ? BigInt(a.balance.balance) : null;
  }

  getAccountNfts(accountId: string, options: { tokenId?: string; limit?: number } = {}): Promise<MirrorNft[]> {
    const q = new URLSearchParams();
    if (options.tokenId) q.set('token.id', options.tokenId);
    q.set('limit', String(Math.min(options.limit ?? 100, 100)));
    return this.collect<MirrorNft>(`/accounts/${encodeURIComponent(accountId)}/nfts?${q}`, 'nfts', options.limit ?? 10_000);
  }

  getAccountTokenRelationships(accountId: string, tokenId?: string): Promise<MirrorTokenRelationship[]> {
    const q = new URLSearchParams();
    if (tokenId) q.set('token.id', tokenId);
    q.set('limit', '100');
    return this.collect<MirrorTokenRelationship>(`/accounts/${encodeURIComponent(accountId)}/tokens?${q}`, 'tokens');
  }

  getTokenNfts(tokenId: string, options: { accountId?: string; limit?: number; order?: 'asc' | 'desc' } = {}): Promise<MirrorNft[]> {
    const q = new URLSearchParams();
    if (options.accountId) q.set('account.id', options.accountId);
    if (options.order) q.set('order', options.order);
    q.set('limit', String(Math.min(options.limit ?? 100, 100)));
    return this.collect<MirrorNft>(`/tokens/${encodeURIComponent(tokenId)}/nfts?${q}`, 'nfts', options.limit ?? 10_000);
  }

  getNft(tokenId: string, serial: number | bigint): Promise<MirrorNft | null> {
    return this.get<MirrorNft>(`/tokens/${encodeURIComponent(tokenId)}/nfts/${serial.toString()}`);
  }

  /**
   * Who holds an NFT according to the ledger: the account id, or null when the NFT does not exist
   * or was burned or wiped. Authorisation checks use this, never a database's copy of the owner.
   * A mirror that cannot answer throws LedgerError MIRROR_UNAVAILABLE (retryable).
   */
  async getNftHolder(tokenId: string, serial: number | bigint): Promise<string | null> {
    const nft = await this.getNft(tokenId, serial);
    if (!nft || nft.deleted) return null;
    return nft.account_id ?? null;
  }

  /** Raw topic messages (unjoined), ascending, with sequence_number > afterSequence. */
  async getTopicMessages(topicId: string, options: { afterSequence?: number; limit?: number } = {}): Promise<MirrorTopicMessage[]> {
    const q = new URLSearchParams();
    q.set('order', 'asc');
    q.set('limit', String(Math.min(options.limit ?? 100, 100)));
    if (options.afterSequence !== undefined && options.afterSequence > 0) q.set('sequencenumber', `gt:${options.afterSequence}`);
    return this.collect<MirrorTopicMessage>(`/topics/${encodeURIComponent(topicId)}/messages?${q}`, 'messages', options.limit ?? 10_000);
  }

  /**
   * Topic messages with chunks joined, ascending. Reads raw messages after `afterSequence` (paging
   * through links.next) and returns complete messages only; `nextAfterSequence` is the cursor for
   * the next call (it stops before an incomplete chunk group so the group is read whole next time).
   */
  async getJoinedTopicMessages(
    topicId: string,
    options: { afterSequence?: number; maxRaw?: number } = {},
  ): Promise<{ messages: JoinedTopicMessage[]; nextAfterSequence: number }> {
    const raw = await this.getTopicMessages(topicId, { afterSequence: options.afterSequence, limit: options.maxRaw ?? 10_000 });
    return joinTopicMessages(raw, options.afterSequence ?? 0);
  }

  /** Transactions with this id (the mirror lists the parent and any child/scheduled records). */
  async getTransactions(transactionId: string): Promise<MirrorTransaction[]> {
    const body = await this.get<{ transactions?: MirrorTransaction[] }>(`/transactions/${encodeURIComponent(toMirrorTransactionId(transactionId))}`);
    return body?.transactions ?? [];
  }

  /** The top-level (non-scheduled) transaction with this id, if the mirror has it. */
  async getTransaction(transactionId: string): Promise<MirrorTransaction | null> {
    const list = await this.getTransactions(transactionId);
    return list.find((t) => !t.scheduled && (t.nonce ?? 0) === 0) ?? list[0] ?? null;
  }

  getSchedule(scheduleId: string): Promise<MirrorSchedule | null> {
    return this.get<MirrorSchedule>(`/schedules/${encodeURIComponent(scheduleId)}`);
  }
}

function chunkGroupKey(c: MirrorChunkInfo): string {
  const t = c.initial_transaction_id;
  return `${t.account_id}-${t.transaction_valid_start}-${t.nonce ?? 0}`;
}

/** Joins chunked topic messages; pure, exported for tests. */
export function joinTopicMessages(
  raw: MirrorTopicMessage[],
  afterSequence = 0,
): { messages: JoinedTopicMessage[]; nextAfterSequence: number } {
  const sorted = [...raw].sort((a, b) => a.sequence_number - b.sequence_number);
  const groups = new Map<string, MirrorTopicMessage[]>();
  const done: JoinedTopicMessage[] = [];
  const make = (parts: MirrorTopicMessage[], initial?: string): JoinedTopicMessage => {
    const bytes = Buffer.concat(parts.map((p) => Buffer.from(p.message, 'base64')));
    const first = parts[0];
    const last = parts[parts.length - 1];
    const message = new Uint8Array(bytes);
    return {
      topicId: first.topic_id,
      sequenceNumber: first.sequence_number,
      lastSequenceNumber: last.sequence_number,
      consensusTimestamp: last.consensus_timestamp,
      payerAccountId: first.payer_account_id,
      initialTransactionId: initial,
      chunks: parts.length,
      message,
      text: () => new TextDecoder().decode(message),
    };
  };
  for (const m of sorted) {
    const c = m.chunk_info;
    if (!c || c.total <= 1) {
      done.push(make([m]));
      continue;
    }
    const key = chunkGroupKey(c);
    const list = groups.get(key) ?? [];
    list.push(m);
    groups.set(key, list);
    const numbers = new Set(list.map((x) => x.chunk_info!.number));
    if (numbers.size >= c.total) {
      const ordered = [...list].sort((a, b) => a.chunk_info!.number - b.chunk_info!.number);
      // drop duplicates of a chunk number, keep the first
      const unique = ordered.filter((x, i) => i === 0 || x.chunk_info!.number !== ordered[i - 1].chunk_info!.number);
      const t = c.initial_transaction_id;
      done.push(make(unique, `${t.account_id}-${t.transaction_valid_start.replace('.', '-')}`));
      groups.delete(key);
    }
  }
  done.sort((a, b) => a.sequenceNumber - b.sequenceNumber);
  // cursor: last sequence read, but stop before the first chunk of a still-incomplete group
  let next = sorted.length ? sorted[sorted.length - 1].sequence_number : afterSequence;
  for (const list of groups.values()) {
    const firstSeq = Math.min(...list.map((x) => x.sequence_number));
    next = Math.min(next, firstSeq - 1);
  }
  // messages completed after an incomplete group's start would be re-read with the cursor; keep
  // only those before the cursor so a caller advancing by nextAfterSequence never sees one twice
  const messages = done.filter((m) => m.lastSequenceNumber <= next);
  return { messages, nextAfterSequence: Math.max(next, afterSequence) };
}
