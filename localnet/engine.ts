// The node: takes transactions through precheck, orders them (consensus time), applies them with
// the handlers, keeps receipts/records and writes the journal. Replay uses the same apply path.
import { proto, Status, big } from './proto.js';
import type { pb as P } from './proto.js';
import { nowNs, txKey, type Ns, type TxId } from './ids.js';
import { KeyIdSigners, SigMapSigners, isSatisfied, type Key, type SignerSet } from './signatures.js';
import {
  FEE_COLLECTOR,
  GENESIS_ACCOUNT,
  NODE_ACCOUNT,
  TOTAL_SUPPLY,
  AUTO_RENEW_PERIOD,
  LedgerState,
  type Schedule,
  type TxRecord,
} from './state.js';
import { Journal } from './journal.js';
import { SNAPSHOT_VERSION, SnapshotStore, tailHash, type Snapshot } from './snapshot.js';
import { Faults } from './faults.js';
import { MAX_TX_BYTES, QUERY_COST, TX_FEE, parseTransaction, precheck, type Parsed } from './precheck.js';
import { dataCase, handlers, isSchedulableCase } from './handlers/index.js';
import { HandleError, type ApplyCtx } from './handlers/types.js';
import { isExpired } from './handlers/schedule.js';

interface Work {
  body: Record<string, unknown>; // TransactionBody or SchedulableTransactionBody
  case: string;
  txId: TxId;
  payer: number;
  memo: string;
  maxFee: bigint;
  validDurationS: bigint;
  node: number;
  hash: Uint8Array;
  signers: SignerSet;
  sigMap: SigMapSigners | null;
  scheduleRef?: number;
  parentNs?: Ns;
}

export class Engine {
  readonly state = new LedgerState();
  readonly faults = new Faults();
  /** Transaction ids that passed precheck (duplicate detection). */
  private seen = new Set<string>();
  /** Accepted, waiting for consensus (delayed by a fault). */
  private pending = new Map<string, Parsed>();
  private queue: Parsed[] = [];
  private timer: NodeJS.Timeout | null = null;
  private replaying = false;
  /** Journal entries applied to the state (replayed or committed). */
  private entries = 0;
  private sinceSnapshot = 0;
  private snapshotTimer: NodeJS.Immediate | null = null;
  /** How the last start rebuilt the state. */
  lastReplay = { fromSnapshot: false, replayed: 0 };

  constructor(
    private readonly journal: Journal | null,
    genesisKey: Key,
    private readonly snapshots: SnapshotStore | null = null,
    /** Committed transactions between two snapshots. */
    private readonly snapshotEvery = 1000,
  ) {
    this.genesis(genesisKey);
    this.faults.onDelay = () => this.armFlush();
  }

  /** The accounts that exist before any transaction: 0.0.2 holds the supply; node and fee accounts. */
  private genesis(key: Key): void {
    for (const [n, balance] of [
      [GENESIS_ACCOUNT, TOTAL_SUPPLY],
      [NODE_ACCOUNT, 0n],
      [FEE_COLLECTOR, 0n],
    ] as const) {
      this.state.accounts.set(n, {
        num: n,
        key,
        balance,
        memo: '',
        maxAutoAssociations: 0,
        usedAutoAssociations: 0,
        alias: null,
        receiverSigRequired: false,
        createdNs: 0n,
        expiryNs: AUTO_RENEW_PERIOD * 1_000_000_000n * 100n,
        deleted: false,
        tokens: new Map(),
      });
    }
  }

  /**
   * Rebuild state: from the snapshot when it matches the journal, then the journal entries after it
   * (all of them without a snapshot). Returns the number of journal entries the state now covers.
   */
  replay(): number {
    if (!this.journal) return 0;
    const snap = this.snapshots?.read() ?? null;
    const usable = snap !== null && this.isSnapshotOf(snap);
    if (usable) this.restore(snap);
    const entries = this.journal.readFrom(usable ? snap.journalBytes : 0);
    this.replaying = true;
    try {
      for (const e of entries) {
        const p = parseTransaction(Buffer.from(e.tx, 'base64'));
        if (typeof p === 'number') continue;
        this.seen.add(p.key);
        this.applyTop(p, BigInt(e.t));
      }
    } finally {
      this.replaying = false;
    }
    this.entries = (usable ? snap.entries : 0) + entries.length;
    this.lastReplay = { fromSnapshot: usable, replayed: entries.length };
    // Kills in a row must not pile up journal to replay: the next start begins here.
    if (entries.length > 0) this.writeSnapshot();
    return this.entries;
  }

  private isSnapshotOf(s: Snapshot): boolean {
    const tail = this.journal!.tail(s.journalBytes, SnapshotStore.tailBytes);
    return tail.length === Math.min(s.journalBytes, SnapshotStore.tailBytes) && tailHash(tail) === s.tailSha;
  }

  private restore(s: Snapshot): void {
    Object.assign(this.state, s.state);
    this.seen = new Set(s.seen);
  }

  /** Write the state as it is now (it covers exactly the journal written so far). */
  writeSnapshot(): void {
    if (!this.journal || !this.snapshots) return;
    const st = this.state;
    const bytes = this.journal.bytes;
    try {
      this.snapshots.write({
        version: SNAPSHOT_VERSION,
        journalBytes: bytes,
        entries: this.entries,
        tailSha: tailHash(this.journal.tail(bytes, SnapshotStore.tailBytes)),
        state: {
          accounts: st.accounts,
          tokens: st.tokens,
          nfts: st.nfts,
          topics: st.topics,
          schedules: st.schedules,
          records: st.records,
          recordsByNs: st.recordsByNs,
          nextEntity: st.nextEntity,
          lastConsensusNs: st.lastConsensusNs,
        },
        // Accepted but not yet at consensus: not in the journal, so not duplicates after a restart.
        seen: [...this.seen].filter((k) => !this.pending.has(k)),
      });
      this.sinceSnapshot = 0;
    } catch (e) {
      // The previous snapshot (a prefix of the journal) stays valid; the next start replays more.
      console.warn(`localnet: snapshot not written: ${(e as Error).message}`);
    }
  }

  private snapshotSoon(): void {
    if (this.snapshotTimer || !this.snapshots) return;
    this.snapshotTimer = setImmediate(() => {
      this.snapshotTimer = null;
      this.writeSnapshot();
    });
  }

  /** Submit a transaction (gRPC or in-process). Returns the precheck code. */
  submit(raw: Uint8Array, opts: { ignoreFaults?: boolean } = {}): number {
    if (!opts.ignoreFaults && this.faults.takeBusy()) return Status.BUSY;
    const p = parseTransaction(raw);
    if (typeof p === 'number') return p;
    const code = precheck(this.state, p, { now: nowNs(), isDuplicate: (k) => this.seen.has(k) });
    if (code !== Status.OK) return code;
    this.accept(p);
    return Status.OK;
  }

  /**
   * Validate and take the payment of a paid query (ANSWER_ONLY). The SDK reuses one payment across
   * retries of the same query, so a payment already taken is accepted again without a second charge.
   */
  payForQuery(payment: P.ITransaction | null | undefined, cost: bigint): number {
    if (!payment) return Status.INSUFFICIENT_TX_FEE;
    const raw = proto.Transaction.encode(payment).finish();
    const p = parseTransaction(raw);
    if (typeof p === 'number') return p;
    if (this.seen.has(p.key)) return Status.OK;
    const code = precheck(this.state, p, { now: nowNs(), isDuplicate: () => false });
    if (code !== Status.OK) return code;
    if (p.case !== 'cryptoTransfer') return Status.INSUFFICIENT_TX_FEE;
    const paid = (p.body.cryptoTransfer?.transfers?.accountAmounts ?? [])
      .filter((aa) => big(aa.accountID?.accountNum) === BigInt(NODE_ACCOUNT))
      .reduce((s, aa) => s + big(aa.amount), 0n);
    if (paid < cost) return Status.INSUFFICIENT_TX_FEE;
    this.accept(p);
    return Status.OK;
  }

  readonly queryCost = QUERY_COST;
  readonly txFee = TX_FEE;
  readonly maxTxBytes = MAX_TX_BYTES;

  private accept(p: Parsed): void {
    this.seen.add(p.key);
    if (this.faults.isDelaying() || this.queue.length) {
      this.pending.set(p.key, p);
      this.queue.push(p);
      this.armFlush();
      return;
    }
    this.commit(p);
  }

  private armFlush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.queue.length && !this.faults.isDelaying()) return;
    const wait = Math.max(0, this.faults.delayUntilMs - Date.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      if (this.faults.isDelaying()) return this.armFlush();
      const q = this.queue;
      this.queue = [];
      for (const p of q) {
        this.pending.delete(p.key);
        this.commit(p);
      }
    }, wait);
  }

  /** Give a consensus time, apply and journal. */
  private commit(p: Parsed): void {
    const now = nowNs();
    const ns = now > this.state.lastConsensusNs ? now : this.state.lastConsensusNs + 1n;
    this.applyTop(p, ns);
    if (!this.journal) return;
    this.journal.append({ t: ns.toString(), tx: Buffer.from(p.raw).toString('base64') });
    this.entries++;
    if (++this.sinceSnapshot >= this.snapshotEvery) this.snapshotSoon();
  }

  private applyTop(p: Parsed, ns: Ns): TxRecord {
    const b = p.body;
    return this.process(
      {
        body: b as unknown as Record<string, unknown>,
        case: p.case ?? '',
        txId: p.txId,
        payer: p.txId.payer,
        memo: b.memo ?? '',
        maxFee: big(b.transactionFee),
        validDurationS: big(b.transactionValidDuration?.seconds),
        node: Number(big(b.nodeAccountID?.accountNum)),
        hash: p.hash,
        signers: new SigMapSigners(p.bodyBytes, p.sigMap),
        sigMap: new SigMapSigners(p.bodyBytes, p.sigMap),
      },
      ns,
    );
  }

  /** Required keys of a body's effect (besides the payer); throws HandleError when unresolvable. */
  requiredKeysOf(body: Record<string, unknown>, payer: number): Key[] {
    const c = dataCase(body);
    if (!c) throw new HandleError(Status.NOT_SUPPORTED);
    return handlers[c].requiredKeys(this.state, body[c], payer);
  }

  private process(w: Work, ns: Ns): TxRecord {
    const st = this.state;
    st.lastConsensusNs = ns;
    const handler = handlers[w.case];
    const rec: TxRecord = {
      txId: w.txId,
      consensusNs: ns,
      status: Status.SUCCESS,
      name: handler?.name ?? w.case.toUpperCase(),
      memo: w.memo,
      maxFee: w.maxFee,
      fee: 0n,
      validDurationS: w.validDurationS,
      node: w.node,
      hash: w.hash,
      transfers: [],
      nftTransfers: [],
      autoAssociations: [],
      entityId: null,
      scheduleRef: w.scheduleRef,
      parentNs: w.parentNs,
    };
    const payer = st.liveAccount(w.payer);
    let feeTransfers: { account: number; amount: bigint }[] = [];
    if (!payer) rec.status = Status.PAYER_ACCOUNT_NOT_FOUND;
    else if (payer.balance < TX_FEE) rec.status = Status.INSUFFICIENT_PAYER_BALANCE;
    else {
      // The fee is charged whatever the outcome once the transaction reaches consensus.
      payer.balance -= TX_FEE;
      st.accounts.get(FEE_COLLECTOR)!.balance += TX_FEE;
      rec.fee = TX_FEE;
      feeTransfers = [
        { account: w.payer, amount: -TX_FEE },
        { account: FEE_COLLECTOR, amount: TX_FEE },
      ];
      if (!handler) rec.status = Status.NOT_SUPPORTED;
      else if (!isSatisfied(payer.key, w.signers)) rec.status = Status.INVALID_SIGNATURE;
      else {
        const ctx: ApplyCtx = {
          state: st,
          consensusNs: ns,
          payer: w.payer,
          txId: w.txId,
          signers: w.signers,
          sigMap: w.sigMap,
          rec,
          requiredKeysOf: (body, payerN) => this.requiredKeysOf(body, payerN),
          isSchedulable: (body) => isSchedulableCase(dataCase(body)),
          trySchedule: (s) => this.pendingSchedules.push(s),
        };
        try {
          const inner = w.body[w.case];
          const keys = handler.requiredKeys(st, inner, w.payer);
          if (!keys.every((k) => isSatisfied(k, w.signers))) throw new HandleError(Status.INVALID_SIGNATURE);
          handler.apply(ctx, inner);
        } catch (e) {
          if (!(e instanceof HandleError)) throw e;
          rec.status = e.status;
          Object.assign(rec, e.receipt);
          rec.transfers = [];
          rec.nftTransfers = [];
          rec.autoAssociations = [];
          this.pendingSchedules = [];
        }
      }
    }
    rec.transfers = mergeTransfers([...feeTransfers, ...rec.transfers]);
    st.records.set(txKey(w.txId), rec);
    st.recordsByNs.push(rec);
    // Schedules whose signatures may now be complete run right after, with their own record.
    const ready = this.pendingSchedules;
    this.pendingSchedules = [];
    for (const s of ready) this.maybeExecute(s);
    return rec;
  }

  private pendingSchedules: Schedule[] = [];

  private maybeExecute(s: Schedule): void {
    const st = this.state;
    if (s.executedNs !== null || s.deletedNs !== null || s.waitForExpiry) return;
    if (isExpired(s, st.lastConsensusNs + 1n)) return;
    const body = proto.SchedulableTransactionBody.decode(s.bodyBytes) as unknown as Record<string, unknown>;
    const c = dataCase(body);
    if (!c) return;
    const signers = new KeyIdSigners(s.signatories);
    let keys: Key[];
    try {
      keys = this.requiredKeysOf(body, s.payer);
    } catch {
      return;
    }
    const payer = st.accounts.get(s.payer);
    if (!payer || !isSatisfied(payer.key, signers)) return;
    if (!keys.every((k) => isSatisfied(k, signers))) return;
    const ns = st.lastConsensusNs + 1n;
    s.executedNs = ns;
    const parentNs = st.lastConsensusNs;
    this.process(
      {
        body,
        case: c,
        txId: s.scheduledTxId,
        payer: s.payer,
        memo: (body.memo as string) ?? '',
        maxFee: big(body.transactionFee),
        validDurationS: 0n,
        node: NODE_ACCOUNT,
        hash: new Uint8Array(48),
        signers,
        sigMap: null,
        scheduleRef: s.num,
        parentNs,
      },
      ns,
    );
  }

  // ---- reads used by queries and the mirror ----

  /** 'pending' while consensus is delayed, the record once applied, null when unknown. */
  lookup(txId: TxId): TxRecord | 'pending' | null {
    const k = txKey(txId);
    if (this.pending.has(k)) return 'pending';
    return this.state.records.get(k) ?? null;
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.faults.onDelay = null;
    if (this.snapshotTimer) clearImmediate(this.snapshotTimer);
    this.snapshotTimer = null;
    if (this.sinceSnapshot > 0) this.writeSnapshot();
  }

  get isReplaying(): boolean {
    return this.replaying;
  }
}

function mergeTransfers(ts: { account: number; amount: bigint }[]) {
  const m = new Map<number, bigint>();
  for (const t of ts) m.set(t.account, (m.get(t.account) ?? 0n) + t.amount);
  return [...m.entries()].filter(([, a]) => a !== 0n).map(([account, amount]) => ({ account, amount }));
}
