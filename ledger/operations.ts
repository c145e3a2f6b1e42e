// Ledger operations of the service. Each operation has a builder (returns an unfrozen SDK transaction,
// so ledger/submit.ts can record it before submitting it) and a direct form that submits and waits
// for the receipt. Every failure is a LedgerError (ledger/errors.ts).
import {
  AccountId,
  Client,
  Hbar,
  HbarUnit,
  Key,
  Long,
  NftId,
  PrivateKey,
  ScheduleCreateTransaction,
  ScheduleDeleteTransaction,
  ScheduleId,
  ScheduleSignTransaction,
  Timestamp,
  TokenId,
  TokenBurnTransaction,
  TokenFreezeTransaction,
  TokenMintTransaction,
  TokenUnfreezeTransaction,
  TokenUpdateNftsTransaction,
  TokenWipeTransaction,
  TopicId,
  TopicMessageSubmitTransaction,
  Transaction,
  TransactionId,
  TransactionReceipt,
  TransactionReceiptQuery,
  TransferTransaction,
} from '@hashgraph/sdk';
import { LedgerError, statusName, toLedgerError } from './errors.js';
import { signTransaction } from '@agent-passport/core/keys';
import type { MirrorClient } from './mirror.js';

/** Serializable summary of a receipt (what we store in PostgreSQL and hand to workflows). */
export interface ReceiptSummary {
  status: string;
  transactionId: string;
  serials?: string[];
  topicSequenceNumber?: string;
  topicRunningHash?: string;
  scheduleId?: string;
  scheduledTransactionId?: string;
  accountId?: string;
  tokenId?: string;
  topicId?: string;
  totalSupply?: string;
  /** the transaction ids of all chunks (chunked topic messages) */
  chunkTransactionIds?: string[];
}

export function summarizeReceipt(receipt: TransactionReceipt, transactionId: string): ReceiptSummary {
  const out: ReceiptSummary = { status: statusName(receipt.status), transactionId };
  if (receipt.serials && receipt.serials.length > 0) out.serials = receipt.serials.map((s) => s.toString());
  if (receipt.topicSequenceNumber != null && !Long.fromValue(receipt.topicSequenceNumber).isZero()) {
    out.topicSequenceNumber = receipt.topicSequenceNumber.toString();
  }
  if (receipt.topicRunningHash && receipt.topicRunningHash.length > 0) out.topicRunningHash = Buffer.from(receipt.topicRunningHash).toString('hex');
  if (receipt.scheduleId) out.scheduleId = receipt.scheduleId.toString();
  if (receipt.scheduledTransactionId) out.scheduledTransactionId = receipt.scheduledTransactionId.toString();
  if (receipt.accountId) out.accountId = receipt.accountId.toString();
  if (receipt.tokenId) out.tokenId = receipt.tokenId.toString();
  if (receipt.topicId) out.topicId = receipt.topicId.toString();
  if (receipt.totalSupply != null && !Long.fromValue(receipt.totalSupply).isZero()) out.totalSupply = receipt.totalSupply.toString();
  return out;
}

export function transactionIdOf(tx: Transaction): string {
  const id = tx.transactionId;
  if (!id) throw new LedgerError('INVALID_TRANSACTION', 'transaction has no transaction id (freeze it first)', { phase: 'input', retryable: false });
  return id.toString();
}

/** All transaction ids a frozen transaction carries (one per chunk for chunked topic messages). */
export function transactionIdsOf(tx: Transaction): string[] {
  const list = (tx as unknown as { _transactionIds?: { list?: TransactionId[] } })._transactionIds?.list;
  if (list && list.length > 0) return list.map((t) => t.toString());
  return [transactionIdOf(tx)];
}

/** Freezes (if needed) and signs with the given keys. */
export async function prepare(client: Client, tx: Transaction, signers: PrivateKey[] = []): Promise<Transaction> {
  if (!tx.isFrozen()) tx.freezeWith(client);
  for (const key of signers) await signTransaction(tx, key);
  return tx;
}

/**
 * Submits a transaction and waits for its receipt. Throws LedgerError: precheck failures (phase
 * precheck), non-SUCCESS receipts (phase receipt), timeouts and transport errors (retryable).
 */
export async function executeAndConfirm(client: Client, tx: Transaction, signers: PrivateKey[] = []): Promise<ReceiptSummary> {
  await prepare(client, tx, signers);
  const transactionId = transactionIdOf(tx);
  try {
    if (tx instanceof TopicMessageSubmitTransaction) {
      const responses = await tx.executeAll(client);
      const last = responses[responses.length - 1];
      const receipt = await last.getReceipt(client);
      const summary = summarizeReceipt(receipt, transactionId);
      if (responses.length > 1) summary.chunkTransactionIds = responses.map((r) => r.transactionId.toString());
      return summary;
    }
    const response = await tx.execute(client);
    const receipt = await response.getReceipt(client);
    return summarizeReceipt(receipt, transactionId);
  } catch (err) {
    throw toLedgerError(err, { transactionId });
  }
}

/**
 * Asks the node for a receipt. Returns the summary for SUCCESS, throws a final LedgerError for other
 * consensus outcomes, and returns `{ status: 'RECEIPT_NOT_FOUND' | 'UNKNOWN' | ... }` (as a pending
 * marker) when the node does not know the outcome within `timeoutMs`.
 */
export async function queryReceipt(
  client: Client,
  transactionId: string,
  options: { timeoutMs?: number; maxAttempts?: number } = {},
): Promise<{ found: true; receipt: ReceiptSummary } | { found: false; status: string }> {
  const q = new TransactionReceiptQuery().setTransactionId(TransactionId.fromString(transactionId)).setValidateStatus(false);
  q.setMaxAttempts(options.maxAttempts ?? 3);
  try {
    const receipt = await q.execute(client, options.timeoutMs ?? 5_000);
    const status = statusName(receipt.status);
    if (status === 'SUCCESS') return { found: true, receipt: summarizeReceipt(receipt, transactionId) };
    if (status === 'UNKNOWN' || status === 'RECEIPT_NOT_FOUND' || status === 'BUSY') return { found: false, status };
    throw new LedgerError(status, `transaction ${transactionId} reached consensus with status ${status}`, { phase: 'receipt', transactionId, retryable: false });
  } catch (err) {
    const le = toLedgerError(err, { transactionId, phase: 'query' });
    if (le.phase === 'receipt') throw le;
    if (le.status === 'RECEIPT_NOT_FOUND' || le.status === 'UNKNOWN' || le.status === 'BUSY' || le.status === 'TIMEOUT' || le.status === 'PLATFORM_NOT_ACTIVE') {
      return { found: false, status: le.status };
    }
    throw le;
  }
}

// ---------------------------------------------------------------- builders

const tinybars = (n: bigint | number | string) => Hbar.from(Long.fromString(BigInt(n).toString()), HbarUnit.Tinybar);

/** An HBAR transfer to one account, or to several (`legs`), out of one account. */
export type HbarTransferInput =
  | { from: string; to: string; amountTinybars: bigint | number | string; memo?: string }
  | { from: string; legs: { to: string; amountTinybars: bigint | number | string }[]; memo?: string };

/**
 * The one HBAR transfer builder: `from` pays the sum of the legs, each leg's account gets its amount
 * (legs of 0 are left out). The sum must be positive.
 */
export function buildHbarTransfer(p: HbarTransferInput): TransferTransaction {
  const legs = 'legs' in p ? p.legs.map((l) => ({ to: l.to, amount: BigInt(l.amountTinybars) })) : [{ to: p.to, amount: BigInt(p.amountTinybars) }];
  const total = legs.reduce((s, l) => s + l.amount, 0n);
  if (total <= 0n) throw new LedgerError('INVALID_ACCOUNT_AMOUNTS', 'transfer amount must be positive', { phase: 'input', retryable: false });
  const tx = new TransferTransaction().addHbarTransfer(AccountId.fromString(p.from), tinybars(-total));
  for (const l of legs) if (l.amount > 0n) tx.addHbarTransfer(AccountId.fromString(l.to), tinybars(l.amount));
  if (p.memo) tx.setTransactionMemo(p.memo);
  return tx;
}

export const NFT_METADATA_MAX_BYTES = 100;
export const NFT_MINT_MAX_BATCH = 10;

function checkMetadata(metadata: Uint8Array): void {
  if (metadata.length > NFT_METADATA_MAX_BYTES) {
    throw new LedgerError('METADATA_TOO_LONG', `NFT metadata is ${metadata.length} bytes; the limit is ${NFT_METADATA_MAX_BYTES}`, { phase: 'input', retryable: false });
  }
}

export function buildMintNft(p: { tokenId: string; metadata: Uint8Array[] }): TokenMintTransaction {
  if (p.metadata.length === 0 || p.metadata.length > NFT_MINT_MAX_BATCH) {
    throw new LedgerError('INVALID_TOKEN_MINT_METADATA', `mint between 1 and ${NFT_MINT_MAX_BATCH} NFTs at once`, { phase: 'input', retryable: false });
  }
  p.metadata.forEach(checkMetadata);
  return new TokenMintTransaction().setTokenId(TokenId.fromString(p.tokenId)).setMetadata(p.metadata);
}

export function buildNftTransfer(p: { tokenId: string; serial: number | bigint | string; from: string; to: string }): TransferTransaction {
  return new TransferTransaction().addNftTransfer(
    new NftId(TokenId.fromString(p.tokenId), Long.fromString(String(p.serial))),
    AccountId.fromString(p.from),
    AccountId.fromString(p.to),
  );
}

/** Burns NFTs the treasury holds (e.g. a minted passport that could not be delivered). */
export function buildBurnNft(p: { tokenId: string; serials: (number | bigint | string)[] }): TokenBurnTransaction {
  return new TokenBurnTransaction().setTokenId(TokenId.fromString(p.tokenId)).setSerials(p.serials.map((s) => Long.fromString(String(s))));
}

export function buildWipeNft(p: { tokenId: string; accountId: string; serials: (number | bigint | string)[] }): TokenWipeTransaction {
  return new TokenWipeTransaction()
    .setTokenId(TokenId.fromString(p.tokenId))
    .setAccountId(AccountId.fromString(p.accountId))
    .setSerials(p.serials.map((s) => Long.fromString(String(s))));
}

/**
 * Freezes (or unfreezes) an account's relationship with a token: while frozen, every transfer of the
 * token from or to the account fails with ACCOUNT_FROZEN_FOR_TOKEN (and so does a wipe). The
 * token's freeze key must sign. Idempotent on the ledger: freezing a frozen relationship succeeds.
 */
export function buildFreezeAccount(p: { tokenId: string; accountId: string; frozen: boolean }): TokenFreezeTransaction | TokenUnfreezeTransaction {
  const tx = p.frozen ? new TokenFreezeTransaction() : new TokenUnfreezeTransaction();
  return tx.setTokenId(TokenId.fromString(p.tokenId)).setAccountId(AccountId.fromString(p.accountId));
}

export function buildUpdateNftMetadata(p: { tokenId: string; serials: (number | bigint | string)[]; metadata: Uint8Array }): TokenUpdateNftsTransaction {
  checkMetadata(p.metadata);
  return new TokenUpdateNftsTransaction()
    .setTokenId(TokenId.fromString(p.tokenId))
    .setSerialNumbers(p.serials.map((s) => Long.fromString(String(s))))
    .setMetadata(p.metadata);
}

export const TOPIC_CHUNK_SIZE = 1024;
export const TOPIC_MESSAGE_MAX_BYTES = 256 * 1024;

export function buildTopicMessage(p: { topicId: string; message: Uint8Array | string; maxChunks?: number }): TopicMessageSubmitTransaction {
  const bytes = typeof p.message === 'string' ? new TextEncoder().encode(p.message) : p.message;
  if (bytes.length === 0) throw new LedgerError('INVALID_TOPIC_MESSAGE', 'topic message is empty', { phase: 'input', retryable: false });
  if (bytes.length > TOPIC_MESSAGE_MAX_BYTES) {
    throw new LedgerError('MESSAGE_SIZE_TOO_LARGE', `topic message is ${bytes.length} bytes; the limit is ${TOPIC_MESSAGE_MAX_BYTES}`, { phase: 'input', retryable: false });
  }
  const chunks = Math.ceil(bytes.length / TOPIC_CHUNK_SIZE);
  return new TopicMessageSubmitTransaction()
    .setTopicId(TopicId.fromString(p.topicId))
    .setChunkSize(TOPIC_CHUNK_SIZE)
    .setMaxChunks(Math.max(p.maxChunks ?? chunks, chunks))
    .setMessage(bytes);
}

export function buildScheduleCreate(p: {
  scheduled: Transaction;
  payerAccountId?: string;
  adminKey?: Key;
  memo?: string;
  expirationTime?: Date;
  waitForExpiry?: boolean;
}): ScheduleCreateTransaction {
  const tx = new ScheduleCreateTransaction().setScheduledTransaction(p.scheduled);
  if (p.payerAccountId) tx.setPayerAccountId(AccountId.fromString(p.payerAccountId));
  if (p.adminKey) tx.setAdminKey(p.adminKey);
  if (p.memo) tx.setScheduleMemo(p.memo);
  if (p.expirationTime) tx.setExpirationTime(Timestamp.fromDate(p.expirationTime));
  if (p.waitForExpiry !== undefined) tx.setWaitForExpiry(p.waitForExpiry);
  return tx;
}

export function buildScheduleSign(p: { scheduleId: string }): ScheduleSignTransaction {
  return new ScheduleSignTransaction().setScheduleId(ScheduleId.fromString(p.scheduleId));
}

export function buildScheduleDelete(p: { scheduleId: string }): ScheduleDeleteTransaction {
  return new ScheduleDeleteTransaction().setScheduleId(ScheduleId.fromString(p.scheduleId));
}

// ---------------------------------------------------------------- direct forms

export async function transferHbar(client: Client, p: HbarTransferInput & { signers?: PrivateKey[] }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildHbarTransfer(p), p.signers);
}

/** Mints NFTs; the receipt's serials are the new serial numbers. The supply key must sign. */
export async function mintNft(client: Client, p: Parameters<typeof buildMintNft>[0] & { supplyKey?: PrivateKey }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildMintNft(p), p.supplyKey ? [p.supplyKey] : []);
}

/** Moves an NFT from the treasury (or any owner whose key is given) to a new owner. */
export async function transferNft(client: Client, p: Parameters<typeof buildNftTransfer>[0] & { senderKey?: PrivateKey }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildNftTransfer(p), p.senderKey ? [p.senderKey] : []);
}

export async function wipeNft(client: Client, p: Parameters<typeof buildWipeNft>[0] & { wipeKey?: PrivateKey }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildWipeNft(p), p.wipeKey ? [p.wipeKey] : []);
}

export async function freezeAccount(client: Client, p: Parameters<typeof buildFreezeAccount>[0] & { freezeKey?: PrivateKey }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildFreezeAccount(p), p.freezeKey ? [p.freezeKey] : []);
}

export async function updateNftMetadata(client: Client, p: Parameters<typeof buildUpdateNftMetadata>[0] & { metadataKey?: PrivateKey }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildUpdateNftMetadata(p), p.metadataKey ? [p.metadataKey] : []);
}

/** Submits a topic message, chunked at 1024 bytes; the receipt is the last chunk's. */
export async function submitTopicMessage(client: Client, p: Parameters<typeof buildTopicMessage>[0] & { submitKey?: PrivateKey }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildTopicMessage(p), p.submitKey ? [p.submitKey] : []);
}

/** Creates a schedule; signers' signatures count towards the scheduled transaction. */
export async function createSchedule(client: Client, p: Parameters<typeof buildScheduleCreate>[0] & { signers?: PrivateKey[] }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildScheduleCreate(p), p.signers);
}

export async function signSchedule(client: Client, p: { scheduleId: string; signers: PrivateKey[] }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildScheduleSign(p), p.signers);
}

export async function deleteSchedule(client: Client, p: { scheduleId: string; adminKey?: PrivateKey }): Promise<ReceiptSummary> {
  return executeAndConfirm(client, buildScheduleDelete(p), p.adminKey ? [p.adminKey] : []);
}

export async function getReceipt(client: Client, transactionId: string, options?: { timeoutMs?: number }) {
  return queryReceipt(client, transactionId, options);
}

// ---------------------------------------------------------------- reads

export interface TokenReceivability {
  accountId: string;
  tokenId: string;
  exists: boolean;
  associated: boolean;
  /** max automatic associations: -1 unlimited, 0 none */
  maxAutomaticAssociations: number;
  usedAutomaticAssociations: number;
  freeAutomaticAssociations: number | 'unlimited';
  canReceive: boolean;
  hint?: string;
}

/**
 * Whether an account can receive a token right now: already associated, or a free automatic
 * association slot (max_automatic_token_associations -1 means unlimited). Read from the mirror.
 */
export async function checkTokenReceivable(mirror: MirrorClient, accountId: string, tokenId: string): Promise<TokenReceivability> {
  const account = await mirror.getAccount(accountId);
  if (!account || account.deleted) {
    return {
      accountId, tokenId, exists: false, associated: false, maxAutomaticAssociations: 0, usedAutomaticAssociations: 0,
      freeAutomaticAssociations: 0, canReceive: false, hint: `account ${accountId} does not exist on the ledger`,
    };
  }
  // /accounts/{id}/tokens when the mirror serves it; the balance's token list otherwise
  const rels = await mirror.getAccountTokenRelationships(accountId).catch(() => []);
  const associated = rels.some((r) => r.token_id === tokenId) || (account.balance.tokens ?? []).some((t) => t.token_id === tokenId);
  const max = Number(account.max_automatic_token_associations ?? 0);
  const used = rels.filter((r) => r.automatic_association === true).length;
  const free: number | 'unlimited' = max < 0 ? 'unlimited' : Math.max(0, max - used);
  const canReceive = associated || free === 'unlimited' || free > 0;
  return {
    accountId, tokenId, exists: true, associated, maxAutomaticAssociations: max, usedAutomaticAssociations: used,
    freeAutomaticAssociations: free, canReceive,
    hint: canReceive ? undefined : `associate token ${tokenId} with account ${accountId} (TokenAssociateTransaction) or raise its max automatic token associations`,
  };
}
