// The ledger state held in memory. Rebuilt from genesis + the journal on start; mutated only by the
// transaction handlers at consensus time, so replaying the same journal gives the same state.
import type { Key } from './signatures.js';
import type { Ns, TxId } from './ids.js';

export const GENESIS_ACCOUNT = 2;
export const NODE_ACCOUNT = 3;
export const FEE_COLLECTOR = 98;
export const FIRST_USER_ENTITY = 1001;
/** 50 billion HBAR in tinybars, the whole supply, held by 0.0.2 at genesis. */
export const TOTAL_SUPPLY = 50_000_000_000n * 100_000_000n;
export const LEDGER_ID = new Uint8Array([3]);
export const AUTO_RENEW_PERIOD = 7_776_000n; // 90 days, seconds
export const DEFAULT_SCHEDULE_LIFETIME_NS = 30n * 60n * 1_000_000_000n;
export const MAX_SCHEDULE_LIFETIME_NS = 62n * 24n * 3600n * 1_000_000_000n;

export interface TokenRel {
  automatic: boolean;
  createdNs: Ns;
  /** Transfers of the token from or to this account fail (ACCOUNT_FROZEN_FOR_TOKEN); tokens with a freeze key only. */
  frozen: boolean;
}

export interface Account {
  num: number;
  key: Key;
  balance: bigint;
  memo: string;
  maxAutoAssociations: number; // -1 unlimited
  usedAutoAssociations: number;
  alias: Uint8Array | null; // 20-byte EVM address alias, when created with one
  receiverSigRequired: boolean;
  createdNs: Ns;
  expiryNs: Ns;
  deleted: boolean;
  tokens: Map<number, TokenRel>;
}

export interface Token {
  num: number;
  name: string;
  symbol: string;
  memo: string;
  type: 'NON_FUNGIBLE_UNIQUE';
  supplyType: 'INFINITE' | 'FINITE';
  maxSupply: bigint;
  totalSupply: bigint;
  nextSerial: bigint;
  treasury: number;
  adminKey: Key | null;
  supplyKey: Key | null;
  wipeKey: Key | null;
  metadataKey: Key | null;
  kycKey: Key | null;
  freezeKey: Key | null;
  /** New associations start frozen (only with a freeze key). */
  freezeDefault: boolean;
  pauseKey: Key | null;
  feeScheduleKey: Key | null;
  metadata: Uint8Array;
  autoRenewAccount: number | null;
  createdNs: Ns;
  modifiedNs: Ns;
  expiryNs: Ns;
  deleted: boolean;
}

export interface Nft {
  token: number;
  serial: bigint;
  owner: number;
  metadata: Uint8Array;
  createdNs: Ns;
  modifiedNs: Ns;
  deleted: boolean;
}

export interface ChunkInfo {
  initialTxId: TxId;
  number: number;
  total: number;
}

export interface TopicMessage {
  topic: number;
  seq: bigint;
  consensusNs: Ns;
  message: Uint8Array;
  runningHash: Uint8Array;
  payer: number;
  chunk: ChunkInfo | null;
}

export interface Topic {
  num: number;
  memo: string;
  adminKey: Key | null;
  submitKey: Key | null;
  autoRenewAccount: number | null;
  seq: bigint;
  runningHash: Uint8Array;
  createdNs: Ns;
  expiryNs: Ns;
  deleted: boolean;
  /** In consensus order; dense, so messages[i].seq === i + 1 (the mirror pages by index). */
  messages: TopicMessage[];
}

export interface ScheduleSignature {
  consensusNs: Ns;
  prefix: Uint8Array;
  signature: Uint8Array;
  type: 'ED25519' | 'ECDSA_SECP256K1';
}

export interface Schedule {
  num: number;
  creator: number;
  payer: number;
  adminKey: Key | null;
  memo: string;
  bodyBytes: Uint8Array; // encoded SchedulableTransactionBody
  identityKey: string; // what makes two creates identical
  createdNs: Ns;
  expirationNs: Ns;
  explicitExpiration: boolean;
  waitForExpiry: boolean;
  executedNs: Ns | null;
  deletedNs: Ns | null;
  signatories: Set<string>; // primitive key ids that signed create/sign transactions
  signatures: ScheduleSignature[];
  scheduledTxId: TxId;
}

export interface Transfer {
  account: number;
  amount: bigint;
}

export interface NftTransferRec {
  token: number;
  serial: bigint;
  sender: number | null;
  receiver: number | null;
}

export interface TxRecord {
  txId: TxId;
  consensusNs: Ns;
  status: number;
  name: string; // mirror node transaction type name
  memo: string;
  maxFee: bigint;
  fee: bigint;
  validDurationS: bigint;
  node: number;
  hash: Uint8Array; // sha384 of the signed transaction bytes
  transfers: Transfer[];
  nftTransfers: NftTransferRec[];
  autoAssociations: { token: number; account: number }[];
  entityId: number | null;
  // receipt fields
  accountId?: number;
  tokenId?: number;
  topicId?: number;
  scheduleId?: number;
  scheduledTxId?: TxId;
  topicSeq?: bigint;
  topicRunningHash?: Uint8Array;
  serials?: bigint[];
  newTotalSupply?: bigint;
  scheduleRef?: number;
  parentNs?: Ns;
}

export class LedgerState {
  accounts = new Map<number, Account>();
  tokens = new Map<number, Token>();
  nfts = new Map<string, Nft>(); // `${token}/${serial}`
  topics = new Map<number, Topic>();
  schedules = new Map<number, Schedule>();
  records = new Map<string, TxRecord>(); // by txKey
  recordsByNs: TxRecord[] = []; // consensus order
  nextEntity = FIRST_USER_ENTITY;
  lastConsensusNs: Ns = 0n;

  allocEntity(): number {
    return this.nextEntity++;
  }

  nft(token: number, serial: bigint): Nft | undefined {
    return this.nfts.get(`${token}/${serial}`);
  }

  liveAccount(n: number): Account | undefined {
    const a = this.accounts.get(n);
    return a && !a.deleted ? a : undefined;
  }
}

export type FreezeStatus = 'NOT_APPLICABLE' | 'FROZEN' | 'UNFROZEN';

/** A relationship's freeze status (the mirror's names): NOT_APPLICABLE for a token without a freeze key. */
export function freezeStatus(t: Token | undefined, frozen: boolean): FreezeStatus {
  if (!t?.freezeKey) return 'NOT_APPLICABLE';
  return frozen ? 'FROZEN' : 'UNFROZEN';
}
