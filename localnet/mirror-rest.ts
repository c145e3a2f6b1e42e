// The mirror node REST subset the ledger adapter reads, in the mirror node's own JSON shapes, plus the
// /__control fault endpoint used by tests.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { proto, statusName } from './proto.js';
import {
  ent,
  longZeroEvmAddress,
  mirrorToNs,
  nsToMirror,
  parseEntity,
  parseTxIdString,
  txIdMirror,
  type Ns,
} from './ids.js';
import { keyKind, type Key } from './signatures.js';
import { AUTO_RENEW_PERIOD, freezeStatus, type Account, type Nft, type TopicMessage, type TxRecord } from './state.js';
import { RUNNING_HASH_VERSION } from './handlers/consensus.js';
import type { Engine } from './engine.js';

class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}
const notFound = () => new HttpError(404, 'Not found');
const badParam = (name: string) => new HttpError(400, `Invalid parameter: ${name}`);

export function keyJson(k: Key | null | undefined) {
  if (!k) return null;
  const kind = keyKind(k);
  const bytes =
    kind === 'ED25519' ? k.ed25519! : kind === 'ECDSA_SECP256K1' ? k.ECDSASecp256k1! : proto.Key.encode(k).finish();
  return { _type: kind, key: Buffer.from(bytes).toString('hex') };
}

const b64 = (u: Uint8Array) => Buffer.from(u).toString('base64');

export type Op = 'eq' | 'ne' | 'gt' | 'gte' | 'lt' | 'lte';
export interface Filter<T> {
  op: Op;
  value: T;
}

/** Parse repeated `name=op:value` parameters (op defaults to eq). */
function filters<T>(q: URLSearchParams, name: string, parse: (s: string) => T | null): Filter<T>[] {
  return q.getAll(name).map((raw) => {
    const m = /^(eq|ne|gt|gte|lt|lte):(.*)$/.exec(raw);
    const op = (m ? m[1] : 'eq') as Op;
    const v = parse(m ? m[2] : raw);
    if (v === null) throw badParam(name);
    return { op, value: v };
  });
}

function matches<T extends bigint | number>(v: T, fs: Filter<T>[]): boolean {
  return fs.every(({ op, value }) =>
    op === 'eq' ? v === value : op === 'ne' ? v !== value : op === 'gt' ? v > value : op === 'gte' ? v >= value : op === 'lt' ? v < value : v <= value,
  );
}

function limitOf(q: URLSearchParams, def = 25): number {
  const raw = q.get('limit');
  if (raw === null) return def;
  const n = Number(raw);
  if (!Number.isInteger(n) || n <= 0) throw badParam('limit');
  return Math.min(n, 100);
}

function orderOf(q: URLSearchParams, def: 'asc' | 'desc'): 'asc' | 'desc' {
  const o = q.get('order');
  if (o === null) return def;
  if (o !== 'asc' && o !== 'desc') throw badParam('order');
  return o;
}

/** First index in [0, n) whose key is >= ns (strict: > ns), for keys ascending with the index. */
function bound(n: number, key: (i: number) => Ns, ns: Ns, strict: boolean): number {
  let lo = 0;
  let hi = n;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    const k = key(mid);
    if (k < ns || (strict && k === ns)) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The index window [lo, hi) of a topic's messages that the sequence number and timestamp bounds allow,
 * without scanning: sequence numbers are dense from 1 (message i has sequence number i + 1) and
 * consensus timestamps ascend with them. `ne` filters are left to the caller.
 */
export function messageWindow(msgs: readonly TopicMessage[], seqF: Filter<bigint>[], tsF: Filter<Ns>[]): [number, number] {
  const n = msgs.length;
  const idx = (seq: bigint) => (seq < 0n ? 0 : seq > BigInt(n) ? n : Number(seq)); // index just after `seq`
  let lo = 0;
  let hi = n;
  for (const { op, value } of seqF) {
    if (op === 'gt' || op === 'eq') lo = Math.max(lo, idx(op === 'gt' ? value : value - 1n));
    if (op === 'gte') lo = Math.max(lo, idx(value - 1n));
    if (op === 'lt') hi = Math.min(hi, idx(value - 1n));
    if (op === 'lte' || op === 'eq') hi = Math.min(hi, idx(value));
  }
  const ts = (i: number) => msgs[i].consensusNs;
  for (const { op, value } of tsF) {
    if (op === 'gt' || op === 'gte' || op === 'eq') lo = Math.max(lo, bound(n, ts, value, op === 'gt'));
    if (op === 'lt' || op === 'lte' || op === 'eq') hi = Math.min(hi, bound(n, ts, value, op !== 'lt'));
  }
  return [lo, Math.max(lo, hi)];
}

const parseSerial = (s: string) => (/^\d{1,19}$/.test(s) ? BigInt(s) : null);

/** links.next: the same query with the paging bound replaced. */
function nextLink(path: string, q: URLSearchParams, param: string, order: 'asc' | 'desc', last: string, limit: number): string {
  const out = new URLSearchParams();
  for (const [k, v] of q) if (k !== 'limit' && k !== 'order' && !(k === param && /^(gt|gte|lt|lte):/.test(v) && v.startsWith(order === 'asc' ? 'g' : 'l'))) out.append(k, v);
  out.set('limit', String(limit));
  out.set('order', order);
  out.append(param, `${order === 'asc' ? 'gt' : 'lt'}:${last}`);
  return `${path}?${out.toString().replace(/%3A/g, ':')}`;
}

export function createMirror(engine: Engine) {
  const st = engine.state;

  function account(idOrAddr: string): Account {
    let n = parseEntity(idOrAddr);
    if (n === null && /^0x[0-9a-fA-F]{40}$/.test(idOrAddr)) {
      const hex = idOrAddr.slice(2).toLowerCase();
      for (const a of st.accounts.values()) if (a.alias && Buffer.from(a.alias).toString('hex') === hex) n = a.num;
      if (n === null && hex.startsWith('000000000000000000000000')) n = parseInt(hex.slice(24), 16);
    }
    if (n === null) throw badParam('idOrAliasOrEvmAddress');
    const a = st.accounts.get(n);
    if (!a) throw notFound();
    return a;
  }

  /** The entity `raw` names in `map`: 400 for a malformed id (named `param`), 404 for an unknown one. */
  function entity<T>(map: Map<number, T>, raw: string, param: string): T {
    const n = parseEntity(raw);
    if (n === null) throw badParam(param);
    const found = map.get(n);
    if (!found) throw notFound();
    return found;
  }

  const evmAddress = (a: Account) => (a.alias ? '0x' + Buffer.from(a.alias).toString('hex') : longZeroEvmAddress(a.num));

  function nftJson(n: Nft) {
    return {
      account_id: n.deleted ? null : ent(n.owner),
      created_timestamp: nsToMirror(n.createdNs),
      delegating_spender: null,
      deleted: n.deleted,
      metadata: b64(n.metadata),
      modified_timestamp: nsToMirror(n.modifiedNs),
      serial_number: Number(n.serial),
      spender: null,
      token_id: ent(n.token),
    };
  }

  function txJson(r: TxRecord) {
    return {
      bytes: null,
      charged_tx_fee: Number(r.fee),
      consensus_timestamp: nsToMirror(r.consensusNs),
      entity_id: r.entityId !== null ? ent(r.entityId) : null,
      max_fee: r.maxFee.toString(),
      memo_base64: Buffer.from(r.memo, 'utf8').toString('base64'),
      name: r.name,
      nft_transfers: r.nftTransfers.map((t) => ({
        is_approval: false,
        receiver_account_id: t.receiver !== null ? ent(t.receiver) : null,
        sender_account_id: t.sender !== null ? ent(t.sender) : null,
        serial_number: Number(t.serial),
        token_id: ent(t.token),
      })),
      node: r.txId.scheduled ? null : ent(r.node),
      nonce: r.txId.nonce,
      parent_consensus_timestamp: r.parentNs !== undefined ? nsToMirror(r.parentNs) : null,
      result: statusName(r.status),
      scheduled: r.txId.scheduled,
      staking_reward_transfers: [],
      token_transfers: [],
      transaction_hash: b64(r.hash),
      transaction_id: txIdMirror(r.txId),
      transfers: r.transfers.map((t) => ({ account: ent(t.account), amount: Number(t.amount), is_approval: false })),
      valid_duration_seconds: r.validDurationS.toString(),
      valid_start_timestamp: nsToMirror(r.txId.validStartNs),
    };
  }

  function messageJson(m: TopicMessage) {
    return {
      chunk_info: m.chunk
        ? {
            initial_transaction_id: {
              account_id: ent(m.chunk.initialTxId.payer),
              nonce: m.chunk.initialTxId.nonce,
              scheduled: m.chunk.initialTxId.scheduled,
              transaction_valid_start: nsToMirror(m.chunk.initialTxId.validStartNs),
            },
            number: m.chunk.number,
            total: m.chunk.total,
          }
        : null,
      consensus_timestamp: nsToMirror(m.consensusNs),
      message: b64(m.message),
      payer_account_id: ent(m.payer),
      running_hash: b64(m.runningHash),
      running_hash_version: Number(RUNNING_HASH_VERSION),
      sequence_number: Number(m.seq),
      topic_id: ent(m.topic),
    };
  }

  function ownedNfts(owner: number | null, token: number | null): Nft[] {
    const out: Nft[] = [];
    for (const n of st.nfts.values()) {
      if (n.deleted) continue;
      if (owner !== null && n.owner !== owner) continue;
      if (token !== null && n.token !== token) continue;
      out.push(n);
    }
    return out;
  }

  function pageNfts(path: string, q: URLSearchParams, list: Nft[]) {
    const limit = limitOf(q);
    const order = orderOf(q, 'desc');
    const serialF = filters(q, 'serialnumber', parseSerial);
    const tokenF = filters(q, 'token.id', (s) => parseEntity(s));
    const rows = list
      .filter((n) => matches(n.serial, serialF) && matches(n.token, tokenF))
      .sort((a, b) => (a.token !== b.token ? a.token - b.token : a.serial < b.serial ? -1 : a.serial > b.serial ? 1 : 0));
    if (order === 'desc') rows.reverse();
    const page = rows.slice(0, limit);
    const last = page[page.length - 1];
    return {
      nfts: page.map(nftJson),
      links: { next: page.length === limit && rows.length > limit && last ? nextLink(path, q, 'serialnumber', order, last.serial.toString(), limit) : null },
    };
  }

  const routes: [RegExp, (m: RegExpExecArray, q: URLSearchParams, path: string) => unknown][] = [
    [
      /^\/api\/v1\/accounts\/([^/]+)$/,
      (m) => {
        const a = account(decodeURIComponent(m[1]));
        const owned = new Map<number, number>();
        for (const n of ownedNfts(a.num, null)) owned.set(n.token, (owned.get(n.token) ?? 0) + 1);
        const txs = st.recordsByNs
          .filter((r) => r.txId.payer === a.num || r.transfers.some((t) => t.account === a.num) || r.nftTransfers.some((t) => t.sender === a.num || t.receiver === a.num))
          .slice(-25)
          .reverse();
        return {
          account: ent(a.num),
          alias: null,
          auto_renew_period: Number(AUTO_RENEW_PERIOD),
          balance: {
            balance: Number(a.balance),
            timestamp: nsToMirror(st.lastConsensusNs),
            tokens: [...a.tokens.keys()].sort((x, y) => x - y).map((t) => ({ token_id: ent(t), balance: owned.get(t) ?? 0 })),
          },
          created_timestamp: nsToMirror(a.createdNs),
          decline_reward: false,
          deleted: a.deleted,
          ethereum_nonce: 0,
          evm_address: evmAddress(a),
          expiry_timestamp: nsToMirror(a.expiryNs),
          key: keyJson(a.key),
          max_automatic_token_associations: a.maxAutoAssociations,
          memo: a.memo,
          pending_reward: 0,
          receiver_sig_required: a.receiverSigRequired,
          staked_account_id: null,
          staked_node_id: null,
          stake_period_start: null,
          transactions: txs.map(txJson),
          links: { next: null },
        };
      },
    ],
    [/^\/api\/v1\/accounts\/([^/]+)\/nfts$/, (m, q, path) => pageNfts(path, q, ownedNfts(account(decodeURIComponent(m[1])).num, null))],
    [
      // Token relationships, as the mirror node's /accounts/{id}/tokens (optionally ?token.id=).
      /^\/api\/v1\/accounts\/([^/]+)\/tokens$/,
      (m, q) => {
        const a = account(decodeURIComponent(m[1]));
        const only = q.get('token.id');
        const owned = new Map<number, number>();
        for (const n of ownedNfts(a.num, null)) owned.set(n.token, (owned.get(n.token) ?? 0) + 1);
        const rels = [...a.tokens.entries()]
          .filter(([t]) => only === null || ent(t) === only.replace(/^eq:/, ''))
          .sort(([x], [y]) => x - y)
          .map(([t, rel]) => ({
            automatic_association: rel.automatic,
            balance: owned.get(t) ?? 0,
            created_timestamp: nsToMirror(rel.createdNs),
            decimals: 0,
            freeze_status: freezeStatus(st.tokens.get(t), rel.frozen),
            kyc_status: 'NOT_APPLICABLE',
            token_id: ent(t),
          }));
        return { tokens: rels, links: { next: null } };
      },
    ],
    [
      /^\/api\/v1\/tokens\/([^/]+)$/,
      (m) => {
        const t = entity(st.tokens, m[1], 'tokenId');
        return {
          admin_key: keyJson(t.adminKey),
          auto_renew_account: t.autoRenewAccount !== null ? ent(t.autoRenewAccount) : null,
          auto_renew_period: Number(AUTO_RENEW_PERIOD),
          created_timestamp: nsToMirror(t.createdNs),
          custom_fees: { created_timestamp: nsToMirror(t.createdNs), fixed_fees: [], royalty_fees: [] },
          decimals: '0',
          deleted: t.deleted,
          expiry_timestamp: Number(t.expiryNs),
          fee_schedule_key: keyJson(t.feeScheduleKey),
          freeze_default: t.freezeDefault,
          freeze_key: keyJson(t.freezeKey),
          initial_supply: '0',
          kyc_key: keyJson(t.kycKey),
          max_supply: t.maxSupply.toString(),
          memo: t.memo,
          metadata: b64(t.metadata),
          metadata_key: keyJson(t.metadataKey),
          modified_timestamp: nsToMirror(t.modifiedNs),
          name: t.name,
          pause_key: keyJson(t.pauseKey),
          pause_status: 'NOT_APPLICABLE',
          supply_key: keyJson(t.supplyKey),
          supply_type: t.supplyType,
          symbol: t.symbol,
          token_id: ent(t.num),
          total_supply: t.totalSupply.toString(),
          treasury_account_id: ent(t.treasury),
          type: t.type,
          wipe_key: keyJson(t.wipeKey),
        };
      },
    ],
    [
      /^\/api\/v1\/tokens\/([^/]+)\/nfts$/,
      (m, q, path) => {
        const t = entity(st.tokens, m[1], 'tokenId');
        const acct = filters(q, 'account.id', (s) => parseEntity(s));
        return pageNfts(path, new URLSearchParams([...q].filter(([k]) => k !== 'account.id')), ownedNfts(null, t.num).filter((x) => matches(x.owner, acct)));
      },
    ],
    [
      /^\/api\/v1\/tokens\/([^/]+)\/nfts\/([^/]+)$/,
      (m) => {
        const n = parseEntity(m[1]);
        const serial = parseSerial(m[2]);
        if (n === null) throw badParam('tokenId');
        if (serial === null) throw badParam('serialNumber');
        const nft = st.nft(n, serial);
        if (!nft) throw notFound();
        return nftJson(nft);
      },
    ],
    [
      /^\/api\/v1\/topics\/([^/]+)$/,
      (m) => {
        const t = entity(st.topics, m[1], 'topicId');
        return {
          admin_key: keyJson(t.adminKey),
          auto_renew_account: t.autoRenewAccount !== null ? ent(t.autoRenewAccount) : null,
          auto_renew_period: Number(AUTO_RENEW_PERIOD),
          created_timestamp: nsToMirror(t.createdNs),
          custom_fees: { created_timestamp: nsToMirror(t.createdNs), fixed_fees: [] },
          deleted: t.deleted,
          fee_exempt_key_list: [],
          fee_schedule_key: null,
          memo: t.memo,
          submit_key: keyJson(t.submitKey),
          timestamp: { from: nsToMirror(t.createdNs), to: null },
          topic_id: ent(t.num),
        };
      },
    ],
    [
      /^\/api\/v1\/topics\/([^/]+)\/messages$/,
      (m, q, path) => {
        const t = entity(st.topics, m[1], 'topicId');
        const limit = limitOf(q);
        const order = orderOf(q, 'asc');
        const seqF = filters(q, 'sequencenumber', (s) => (/^\d{1,19}$/.test(s) ? BigInt(s) : null));
        const tsF = filters(q, 'timestamp', mirrorToNs);
        // Walk the allowed window from the requested end, taking limit + 1 rows (the extra one says whether
        // there is a next page): a page costs O(limit + log n), not O(topic).
        const [lo, hi] = messageWindow(t.messages, seqF, tsF);
        const rows: TopicMessage[] = [];
        for (let k = 0; k < hi - lo && rows.length <= limit; k++) {
          const x = t.messages[order === 'asc' ? lo + k : hi - 1 - k];
          if (matches(x.seq, seqF) && matches<Ns>(x.consensusNs, tsF)) rows.push(x);
        }
        const page = rows.slice(0, limit);
        const last = page[page.length - 1];
        return {
          messages: page.map(messageJson),
          links: { next: page.length === limit && rows.length > limit && last ? nextLink(path, q, 'sequencenumber', order, last.seq.toString(), limit) : null },
        };
      },
    ],
    [
      /^\/api\/v1\/topics\/([^/]+)\/messages\/([^/]+)$/,
      (m) => {
        if (!/^\d{1,19}$/.test(m[2])) throw badParam('sequenceNumber');
        const t = entity(st.topics, m[1], 'topicId');
        const seq = BigInt(m[2]);
        const msg = seq >= 1n && seq <= Number.MAX_SAFE_INTEGER ? t.messages[Number(seq) - 1] : undefined;
        if (!msg) throw notFound();
        return messageJson(msg);
      },
    ],
    [
      // The mirror's transaction list (issue 13 audits): account.id (payer, HBAR or NFT transfer), timestamp,
      // transactiontype, result=success|fail, type=credit|debit, order (desc), limit, links.next by timestamp.
      /^\/api\/v1\/transactions$/,
      (_m, q, path) => {
        const limit = limitOf(q);
        const order = orderOf(q, 'desc');
        const tsF = filters(q, 'timestamp', mirrorToNs);
        const acctF = filters(q, 'account.id', (s) => parseEntity(s));
        if (acctF.length > 1 || acctF.some((f) => f.op !== 'eq')) throw badParam('account.id');
        const acct = acctF[0]?.value ?? null;
        const type = q.get('transactiontype')?.toUpperCase() ?? null;
        if (type !== null && !/^[A-Z]{3,40}$/.test(type)) throw badParam('transactiontype');
        const result = q.get('result');
        if (result !== null && result !== 'success' && result !== 'fail') throw badParam('result');
        const credit = q.get('type');
        if (credit !== null && credit !== 'credit' && credit !== 'debit') throw badParam('type');
        const SUCCESS = proto.ResponseCodeEnum.SUCCESS;
        const keep = (r: TxRecord) =>
          (acct === null || r.txId.payer === acct || r.transfers.some((t) => t.account === acct) || r.nftTransfers.some((t) => t.sender === acct || t.receiver === acct)) &&
          (type === null || r.name === type) &&
          (result === null || (r.status === SUCCESS) === (result === 'success')) &&
          (credit === null || r.transfers.some((t) => (acct === null || t.account === acct) && (credit === 'credit' ? t.amount > 0n : t.amount < 0n))) &&
          matches<Ns>(r.consensusNs, tsF);
        // the timestamp bounds by binary search (records are in consensus order), then limit + 1 rows from the requested end
        const recs = st.recordsByNs;
        const ts = (i: number) => recs[i].consensusNs;
        let lo = 0;
        let hi = recs.length;
        for (const { op, value } of tsF) {
          if (op === 'gt' || op === 'gte' || op === 'eq') lo = Math.max(lo, bound(recs.length, ts, value, op === 'gt'));
          if (op === 'lt' || op === 'lte' || op === 'eq') hi = Math.min(hi, bound(recs.length, ts, value, op !== 'lt'));
        }
        const rows: TxRecord[] = [];
        for (let k = 0; k < hi - lo && rows.length <= limit; k++) {
          const r = recs[order === 'asc' ? lo + k : hi - 1 - k];
          if (keep(r)) rows.push(r);
        }
        const page = rows.slice(0, limit);
        const last = page[page.length - 1];
        return {
          transactions: page.map(txJson),
          links: { next: rows.length > limit && last ? nextLink(path, q, 'timestamp', order, nsToMirror(last.consensusNs), limit) : null },
        };
      },
    ],
    [
      /^\/api\/v1\/transactions\/([^/]+)$/,
      (m, q) => {
        const id = parseTxIdString(decodeURIComponent(m[1]));
        if (!id) throw badParam('transactionId');
        const nonce = q.get('nonce');
        const scheduled = q.get('scheduled');
        if (nonce !== null && !/^\d+$/.test(nonce)) throw badParam('nonce');
        if (scheduled !== null && scheduled !== 'true' && scheduled !== 'false') throw badParam('scheduled');
        const cutoff = engine.faults.mirrorCutoffNs();
        const rows = st.recordsByNs.filter(
          (r) =>
            (cutoff === null || r.consensusNs <= cutoff) &&
            r.txId.payer === id.payer &&
            r.txId.validStartNs === id.validStartNs &&
            (nonce === null || r.txId.nonce === Number(nonce)) &&
            (scheduled === null || r.txId.scheduled === (scheduled === 'true')),
        );
        if (!rows.length) throw notFound();
        return { transactions: rows.map(txJson) };
      },
    ],
    [
      /^\/api\/v1\/schedules\/([^/]+)$/,
      (m) => {
        const s = entity(st.schedules, m[1], 'scheduleId');
        // a lagging mirror (fault) has not indexed what happened after its cutoff
        const cutoff = engine.faults.mirrorCutoffNs();
        const seen = (ns: Ns | null) => (ns !== null && (cutoff === null || ns <= cutoff) ? ns : null);
        return {
          admin_key: keyJson(s.adminKey),
          consensus_timestamp: nsToMirror(s.createdNs),
          creator_account_id: ent(s.creator),
          deleted: seen(s.deletedNs) !== null,
          executed_timestamp: seen(s.executedNs) !== null ? nsToMirror(s.executedNs!) : null,
          expiration_time: s.explicitExpiration ? nsToMirror(s.expirationNs) : null,
          memo: s.memo,
          payer_account_id: ent(s.payer),
          schedule_id: ent(s.num),
          signatures: s.signatures.map((g) => ({
            consensus_timestamp: nsToMirror(g.consensusNs),
            public_key_prefix: b64(g.prefix),
            signature: b64(g.signature),
            type: g.type,
          })),
          transaction_body: b64(s.bodyBytes),
          wait_for_expiry: s.waitForExpiry,
        };
      },
    ],
  ];

  async function control(req: IncomingMessage, action: string, q: URLSearchParams): Promise<unknown> {
    let body: Record<string, unknown> = {};
    if (req.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const c of req) chunks.push(c as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim()) body = JSON.parse(text) as Record<string, unknown>;
    }
    const numParam = (name: string) => {
      const v = Number(body[name] ?? q.get(name));
      if (!Number.isFinite(v) || v < 0) throw badParam(name);
      return v;
    };
    const f = engine.faults;
    if (action === 'busy') f.busy(numParam('n'));
    else if (action === 'unavailable') f.unavailable(numParam('seconds'));
    else if (action === 'delay') f.delayConsensus(numParam('seconds'));
    else if (action === 'freezeMirror') f.freezeMirror(numParam('seconds'), engine.state.lastConsensusNs);
    else if (action === 'reset') f.reset();
    else if (action !== 'state') throw notFound();
    return f.snapshot();
  }

  return async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
      res.end(JSON.stringify(body));
    };
    try {
      const ctl = /^\/__control\/(\w+)$/.exec(url.pathname);
      if (ctl) return send(200, await control(req, ctl[1], url.searchParams));
      if (req.method !== 'GET' && req.method !== 'HEAD') throw new HttpError(405, 'Method not allowed');
      const path = url.pathname.replace(/\/+$/, '');
      for (const [re, fn] of routes) {
        const m = re.exec(path);
        if (m) return send(200, fn(m, url.searchParams, path));
      }
      throw notFound();
    } catch (e) {
      if (e instanceof HttpError) return send(e.status, { _status: { messages: [{ message: e.message }] } });
      if (e instanceof SyntaxError) return send(400, { _status: { messages: [{ message: 'Invalid JSON body' }] } });
      console.error('[localnet] mirror error', e);
      return send(500, { _status: { messages: [{ message: 'Internal error' }] } });
    }
  };
}

export interface HttpHandle {
  url: string;
  port: number;
  stop(): Promise<void>;
}

export async function startMirrorServer(engine: Engine, host: string, port: number): Promise<HttpHandle> {
  const handler = createMirror(engine);
  const server = createServer((req, res) => void handler(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const bound = (server.address() as AddressInfo).port;
  return {
    url: `http://${host}:${bound}`,
    port: bound,
    stop: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
