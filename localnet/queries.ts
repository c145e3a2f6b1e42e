// HAPI queries: free ones (balance, receipt) and paid ones (COST_ANSWER, then ANSWER_ONLY with a
// payment transaction). Unknown query kinds answer NOT_SUPPORTED in the matching response field.
import { proto, Status, L, big } from './proto.js';
import type { pb as P } from './proto.js';
import {
  accountId,
  accountNum,
  longZeroEvmAddress,
  nsToTs,
  scheduleId,
  scheduleNum,
  tokenId,
  tokenNum,
  topicId,
  topicNum,
  txIdFromProto,
  txIdToProto,
} from './ids.js';
import { primitiveFromId } from './signatures.js';
import { AUTO_RENEW_PERIOD, LEDGER_ID, freezeStatus, type FreezeStatus, type TxRecord } from './state.js';
import { RUNNING_HASH_VERSION } from './handlers/consensus.js';
import { isPurged } from './handlers/schedule.js';
import type { Engine } from './engine.js';

const ANSWER_ONLY = 0;
/** HAPI TokenFreezeStatus values. */
const FREEZE_STATUS: Record<FreezeStatus, number> = { NOT_APPLICABLE: 0, FROZEN: 1, UNFROZEN: 2 };
const COST_ANSWER = 2;

/** Query case -> Response case (names differ for a few contract queries). */
const RESPONSE_FIELD: Record<string, string> = {
  contractGetBytecode: 'contractGetBytecodeResponse',
  ContractGetRecords: 'contractGetRecordsResponse',
};

type Answer = { status: number; body?: Record<string, unknown> };
interface QueryDef {
  free: boolean;
  answer(e: Engine, q: any): Answer;
}

const EXCHANGE_RATE = {
  currentRate: { hbarEquiv: 30000, centEquiv: 150000, expirationTime: { seconds: L(4102444800) } },
  nextRate: { hbarEquiv: 30000, centEquiv: 150000, expirationTime: { seconds: L(4102444800) } },
};

export function receiptProto(r: TxRecord | null, status?: number): P.ITransactionReceipt {
  if (!r) return { status: status ?? Status.UNKNOWN, exchangeRate: EXCHANGE_RATE };
  const out: P.ITransactionReceipt = { status: r.status, exchangeRate: EXCHANGE_RATE };
  if (r.accountId !== undefined) out.accountID = accountId(r.accountId);
  if (r.tokenId !== undefined) out.tokenID = tokenId(r.tokenId);
  if (r.topicId !== undefined) out.topicID = topicId(r.topicId);
  if (r.scheduleId !== undefined) out.scheduleID = scheduleId(r.scheduleId);
  if (r.scheduledTxId) out.scheduledTransactionID = txIdToProto(r.scheduledTxId);
  if (r.topicSeq !== undefined) {
    out.topicSequenceNumber = L(r.topicSeq);
    out.topicRunningHash = r.topicRunningHash;
    out.topicRunningHashVersion = L(RUNNING_HASH_VERSION);
  }
  if (r.newTotalSupply !== undefined) out.newTotalSupply = L(r.newTotalSupply);
  if (r.serials) out.serialNumbers = r.serials.map((s) => L(s));
  return out;
}

export function recordProto(r: TxRecord): P.ITransactionRecord {
  const byToken = new Map<number, P.INftTransfer[]>();
  for (const t of r.nftTransfers) {
    if (!byToken.has(t.token)) byToken.set(t.token, []);
    byToken.get(t.token)!.push({
      senderAccountID: accountId(t.sender ?? 0),
      receiverAccountID: accountId(t.receiver ?? 0),
      serialNumber: L(t.serial),
    });
  }
  return {
    receipt: receiptProto(r),
    transactionHash: r.hash,
    consensusTimestamp: nsToTs(r.consensusNs),
    transactionID: txIdToProto(r.txId),
    memo: r.memo,
    transactionFee: L(r.fee),
    transferList: { accountAmounts: r.transfers.map((t) => ({ accountID: accountId(t.account), amount: L(t.amount) })) },
    tokenTransferLists: [...byToken.entries()].map(([tok, nftTransfers]) => ({ token: tokenId(tok), nftTransfers })),
    scheduleRef: r.scheduleRef !== undefined ? scheduleId(r.scheduleRef) : null,
    automaticTokenAssociations: r.autoAssociations.map((a) => ({ tokenId: tokenId(a.token), accountId: accountId(a.account) })),
    parentConsensusTimestamp: r.parentNs !== undefined ? nsToTs(r.parentNs) : null,
  };
}

const pendingReceipt = { status: Status.UNKNOWN, exchangeRate: EXCHANGE_RATE };

const QUERIES: Record<string, QueryDef> = {
  cryptogetAccountBalance: {
    free: true,
    answer(e, q: P.ICryptoGetAccountBalanceQuery) {
      const n = accountNum(q.accountID);
      const a = e.state.accounts.get(n);
      if (!a) return { status: Status.INVALID_ACCOUNT_ID };
      if (a.deleted) return { status: Status.ACCOUNT_DELETED };
      return { status: Status.OK, body: { accountID: accountId(n), balance: L(a.balance) } };
    },
  },
  transactionGetReceipt: {
    free: true,
    answer(e, q: P.ITransactionGetReceiptQuery) {
      const id = txIdFromProto(q.transactionID);
      if (!id) return { status: Status.INVALID_TRANSACTION_ID };
      const r = e.lookup(id);
      if (r === 'pending') return { status: Status.OK, body: { receipt: pendingReceipt } };
      if (!r) return { status: Status.RECEIPT_NOT_FOUND };
      return { status: Status.OK, body: { receipt: receiptProto(r) } };
    },
  },
  transactionGetRecord: {
    free: false,
    answer(e, q: P.ITransactionGetRecordQuery) {
      const id = txIdFromProto(q.transactionID);
      if (!id) return { status: Status.INVALID_TRANSACTION_ID };
      const r = e.lookup(id);
      if (r === 'pending')
        return { status: Status.OK, body: { transactionRecord: { receipt: pendingReceipt, transactionID: q.transactionID } } };
      if (!r) return { status: Status.RECORD_NOT_FOUND };
      return { status: Status.OK, body: { transactionRecord: recordProto(r) } };
    },
  },
  cryptoGetInfo: {
    free: false,
    answer(e, q: P.ICryptoGetInfoQuery) {
      const n = accountNum(q.accountID);
      const a = e.state.accounts.get(n);
      if (!a) return { status: Status.INVALID_ACCOUNT_ID };
      if (a.deleted) return { status: Status.ACCOUNT_DELETED };
      const owned = new Map<number, bigint>();
      let ownedTotal = 0n;
      for (const nft of e.state.nfts.values())
        if (!nft.deleted && nft.owner === n) {
          owned.set(nft.token, (owned.get(nft.token) ?? 0n) + 1n);
          ownedTotal++;
        }
      return {
        status: Status.OK,
        body: {
          accountInfo: {
            accountID: accountId(n),
            contractAccountID: longZeroEvmAddress(n).slice(2),
            deleted: false,
            key: a.key,
            balance: L(a.balance),
            receiverSigRequired: a.receiverSigRequired,
            expirationTime: nsToTs(a.expiryNs),
            autoRenewPeriod: { seconds: L(AUTO_RENEW_PERIOD) },
            tokenRelationships: [...a.tokens.entries()].map(([t, rel]) => ({
              tokenId: tokenId(t),
              symbol: e.state.tokens.get(t)?.symbol ?? '',
              balance: L(owned.get(t) ?? 0n),
              decimals: 0,
              automaticAssociation: rel.automatic,
              freezeStatus: FREEZE_STATUS[freezeStatus(e.state.tokens.get(t), rel.frozen)],
            })),
            memo: a.memo,
            ownedNfts: L(ownedTotal),
            maxAutomaticTokenAssociations: a.maxAutoAssociations,
            alias: a.alias ?? new Uint8Array(),
            ledgerId: LEDGER_ID,
            ethereumNonce: L(0),
          },
        },
      };
    },
  },
  tokenGetInfo: {
    free: false,
    answer(e, q: P.ITokenGetInfoQuery) {
      const t = e.state.tokens.get(tokenNum(q.token));
      if (!t) return { status: Status.INVALID_TOKEN_ID };
      return {
        status: Status.OK,
        body: {
          tokenInfo: {
            tokenId: tokenId(t.num),
            name: t.name,
            symbol: t.symbol,
            decimals: 0,
            totalSupply: L(t.totalSupply),
            treasury: accountId(t.treasury),
            adminKey: t.adminKey,
            kycKey: t.kycKey,
            freezeKey: t.freezeKey,
            wipeKey: t.wipeKey,
            supplyKey: t.supplyKey,
            defaultFreezeStatus: FREEZE_STATUS[freezeStatus(t, t.freezeDefault)],
            defaultKycStatus: 0,
            deleted: t.deleted,
            autoRenewAccount: t.autoRenewAccount !== null ? accountId(t.autoRenewAccount) : null,
            autoRenewPeriod: { seconds: L(AUTO_RENEW_PERIOD) },
            expiry: nsToTs(t.expiryNs),
            memo: t.memo,
            tokenType: 1,
            supplyType: t.supplyType === 'FINITE' ? 1 : 0,
            maxSupply: L(t.maxSupply),
            feeScheduleKey: t.feeScheduleKey,
            customFees: [],
            pauseKey: t.pauseKey,
            pauseStatus: 0,
            ledgerId: LEDGER_ID,
            metadata: t.metadata,
            metadataKey: t.metadataKey,
          },
        },
      };
    },
  },
  tokenGetNftInfo: {
    free: false,
    answer(e, q: P.ITokenGetNftInfoQuery) {
      const nft = e.state.nft(tokenNum(q.nftID?.token_ID), big(q.nftID?.serialNumber));
      if (!nft || nft.deleted) return { status: Status.INVALID_NFT_ID };
      return {
        status: Status.OK,
        body: {
          nft: {
            nftID: { token_ID: tokenId(nft.token), serialNumber: L(nft.serial) },
            accountID: accountId(nft.owner),
            creationTime: nsToTs(nft.createdNs),
            metadata: nft.metadata,
            ledgerId: LEDGER_ID,
          },
        },
      };
    },
  },
  consensusGetTopicInfo: {
    free: false,
    answer(e, q: P.IConsensusGetTopicInfoQuery) {
      const t = e.state.topics.get(topicNum(q.topicID));
      if (!t || t.deleted) return { status: Status.INVALID_TOPIC_ID };
      return {
        status: Status.OK,
        body: {
          topicID: topicId(t.num),
          topicInfo: {
            memo: t.memo,
            runningHash: t.runningHash,
            sequenceNumber: L(t.seq),
            expirationTime: nsToTs(t.expiryNs),
            adminKey: t.adminKey,
            submitKey: t.submitKey,
            autoRenewPeriod: { seconds: L(AUTO_RENEW_PERIOD) },
            autoRenewAccount: t.autoRenewAccount !== null ? accountId(t.autoRenewAccount) : null,
            ledgerId: LEDGER_ID,
          },
        },
      };
    },
  },
  scheduleGetInfo: {
    free: false,
    answer(e, q: P.IScheduleGetInfoQuery) {
      const s = e.state.schedules.get(scheduleNum(q.scheduleID));
      // executed and deleted schedules answer (executionTime / deletionTime) until their expiration purges them
      if (!s || isPurged(s, e.state.lastConsensusNs)) return { status: Status.INVALID_SCHEDULE_ID };
      return {
        status: Status.OK,
        body: {
          scheduleInfo: {
            scheduleID: scheduleId(s.num),
            executionTime: s.executedNs !== null ? nsToTs(s.executedNs) : null,
            deletionTime: s.deletedNs !== null ? nsToTs(s.deletedNs) : null,
            expirationTime: nsToTs(s.expirationNs),
            scheduledTransactionBody: proto.SchedulableTransactionBody.decode(s.bodyBytes),
            memo: s.memo,
            adminKey: s.adminKey,
            signers: { keys: [...s.signatories].map(primitiveFromId) },
            creatorAccountID: accountId(s.creator),
            payerAccountID: accountId(s.payer),
            scheduledTransactionID: txIdToProto(s.scheduledTxId),
            ledgerId: LEDGER_ID,
            waitForExpiry: s.waitForExpiry,
          },
        },
      };
    },
  },
};

/** Answer one Query; returns the Response message. */
export function handleQuery(e: Engine, raw: Uint8Array): P.IResponse {
  let query: P.Query;
  try {
    query = proto.Query.decode(raw);
  } catch {
    return {};
  }
  const c = query.query;
  if (!c) return {};
  const field = RESPONSE_FIELD[c] ?? c;
  const q = (query as unknown as Record<string, { header?: P.IQueryHeader }>)[c];
  const responseType = q?.header?.responseType ?? ANSWER_ONLY;
  const reply = (status: number, cost: bigint, body: Record<string, unknown> = {}): P.IResponse => ({
    [field]: { header: { nodeTransactionPrecheckCode: status, responseType, cost: L(cost) }, ...body },
  });
  const def = QUERIES[c];
  if (!def) return reply(Status.NOT_SUPPORTED, 0n);
  const cost = def.free ? 0n : e.queryCost;
  if (responseType === COST_ANSWER) return reply(Status.OK, cost);
  if (!def.free) {
    const paid = e.payForQuery(q.header?.payment, cost);
    if (paid !== Status.OK) return reply(paid, cost);
  }
  const a = def.answer(e, q);
  return reply(a.status, cost, a.status === Status.OK ? a.body : {});
}
