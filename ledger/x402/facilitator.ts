// The facilitator's side of the x402 `exact` scheme on Hedera: verify (ledger/x402/verifyPayment.ts
// plus the payer's key from the mirror and a replay check) and settle (the fee payer signs, submits,
// waits for the receipt). Settle is idempotent: a settle retried after success returns the same
// result, also across DUPLICATE_TRANSACTION and across restarts when a store file is used.
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Client, PublicKey } from '@hashgraph/sdk';
import type { Network, PaymentPayload, PaymentRequirements, SettleResponse, SupportedResponse, VerifyResponse } from '@x402/core/types';
import { toLedgerError } from '../errors.js';
import { publicKeyFromMirror, type KeyType, parsePrivateKey, signTransaction } from '@agent-passport/core/keys';
import type { MirrorClient } from '../mirror.js';
import { queryReceipt } from '../operations.js';
import { EXACT_SCHEME } from '@agent-passport/core/x402/network';
import { sha256Hex } from '../../domain/hash.js';
import { payloadTransactionBase64, verifyHederaPayment, type VerifyPolicy, type VerifyResult } from './verifyPayment.js';

export interface SettlementRecord {
  bytesHash: string;
  response: SettleResponse;
}

/** Where settled payments are remembered (replay protection, idempotent settle). */
export interface SettlementStore {
  get(transactionId: string): SettlementRecord | undefined;
  put(transactionId: string, record: SettlementRecord): void;
}

export class MemorySettlementStore implements SettlementStore {
  protected readonly map = new Map<string, SettlementRecord>();
  get(id: string) {
    return this.map.get(id);
  }
  put(id: string, r: SettlementRecord) {
    this.map.set(id, r);
  }
}

/** A JSON file in the data directory; rewritten atomically on each settlement. */
export class FileSettlementStore extends MemorySettlementStore {
  constructor(private readonly file: string) {
    super();
    try {
      const data = JSON.parse(readFileSync(file, 'utf8')) as Record<string, SettlementRecord>;
      for (const [k, v] of Object.entries(data)) this.map.set(k, v);
    } catch {
      // no file yet
    }
  }
  override put(id: string, r: SettlementRecord) {
    super.put(id, r);
    mkdirSync(path.dirname(this.file), { recursive: true });
    const tmp = `${this.file}.tmp`;
    writeFileSync(tmp, JSON.stringify(Object.fromEntries(this.map)));
    renameSync(tmp, this.file);
  }
}

export interface HederaFacilitatorOptions {
  /** x402 network id, e.g. hedera:local */
  network: string;
  /** SDK client whose operator is the fee payer */
  client: Client;
  feePayer: { accountId: string; privateKey: string; keyType?: KeyType };
  mirror: MirrorClient;
  store?: SettlementStore;
  policy?: Omit<VerifyPolicy, 'feePayer' | 'network'>;
  now?: () => number;
}

export class HederaExactFacilitator {
  readonly scheme = EXACT_SCHEME;
  readonly caipFamily = 'hedera:*';
  private readonly store: SettlementStore;
  private readonly inflight = new Map<string, Promise<SettleResponse>>();
  private readonly feePayerKey;

  constructor(private readonly options: HederaFacilitatorOptions) {
    this.store = options.store ?? new MemorySettlementStore();
    this.feePayerKey = parsePrivateKey(options.feePayer.privateKey, options.feePayer.keyType);
  }

  get network(): Network {
    return this.options.network as Network;
  }

  get feePayer(): string {
    return this.options.feePayer.accountId;
  }

  getExtra(): Record<string, unknown> {
    return { feePayer: this.feePayer };
  }

  getSigners(): string[] {
    return [this.feePayer];
  }

  supported(): SupportedResponse {
    return {
      kinds: [{ x402Version: 2, scheme: EXACT_SCHEME, network: this.network, extra: this.getExtra() }],
      extensions: [],
      signers: { [this.caipFamily]: this.getSigners() },
    };
  }

  private policy(): VerifyPolicy {
    const nodes = Object.values(this.options.client.network).map((n) => n.toString());
    return { nodeAccountIds: nodes, ...this.options.policy, feePayer: this.feePayer, network: this.network };
  }

  private async check(payload: PaymentPayload, requirements: PaymentRequirements, replay: 'strict' | 'ignore'): Promise<VerifyResult> {
    return verifyHederaPayment(payload, requirements, this.policy(), {
      now: this.options.now,
      getPayerPublicKey: async (accountId): Promise<PublicKey | null> => {
        const account = await this.options.mirror.getAccount(accountId);
        return account && !account.deleted ? publicKeyFromMirror(account.key) : null;
      },
      isSeen: async (transactionId) => {
        if (replay === 'ignore') return false;
        if (this.store.get(transactionId) || this.inflight.has(transactionId)) return true;
        return (await this.options.mirror.getTransaction(transactionId)) !== null;
      },
    });
  }

  async verify(payload: PaymentPayload, requirements: PaymentRequirements): Promise<VerifyResponse> {
    const r = await this.check(payload, requirements, 'strict');
    if (r.isValid) return { isValid: true, payer: r.payer };
    return { isValid: false, invalidReason: r.invalidReason, invalidMessage: r.invalidMessage, payer: r.payer };
  }

  async settle(payload: PaymentPayload, requirements: PaymentRequirements): Promise<SettleResponse> {
    const b64 = payloadTransactionBase64(payload);
    const bytesHash = typeof b64 === 'string' ? sha256Hex(b64) : '';
    // idempotency first: the same transaction settled before gives the same answer
    const pre = await this.check(payload, requirements, 'ignore');
    if (!pre.isValid) {
      const earlier = pre.transactionId ? this.store.get(pre.transactionId) : undefined;
      if (earlier && earlier.bytesHash === bytesHash) return earlier.response;
      return { success: false, errorReason: pre.invalidReason, errorMessage: pre.invalidMessage, transaction: pre.transactionId ?? '', network: this.network, payer: pre.payer };
    }
    const { transactionId } = pre.payment;
    const earlier = this.store.get(transactionId);
    if (earlier) {
      if (earlier.bytesHash === bytesHash) return earlier.response;
      return { success: false, errorReason: 'transaction_already_used', errorMessage: 'this transaction id was settled with other bytes', transaction: transactionId, network: this.network, payer: pre.payer };
    }
    const running = this.inflight.get(transactionId);
    if (running) return running;
    const p = this.submit(pre.payment.transaction, transactionId, pre.payer, bytesHash).finally(() => this.inflight.delete(transactionId));
    this.inflight.set(transactionId, p);
    return p;
  }

  private async submit(tx: import('@hashgraph/sdk').Transaction, transactionId: string, payer: string, bytesHash: string): Promise<SettleResponse> {
    const base = { transaction: transactionId, network: this.network, payer };
    const client = this.options.client;
    try {
      await signTransaction(tx, this.feePayerKey);
      const response = await tx.execute(client);
      const receipt = await response.getReceipt(client);
      const result: SettleResponse = { success: true, ...base, extra: { status: receipt.status.toString() } };
      this.store.put(transactionId, { bytesHash, response: result });
      return result;
    } catch (err) {
      const le = toLedgerError(err, { transactionId });
      if (le.status === 'DUPLICATE_TRANSACTION') {
        // submitted before (e.g. by a settle whose answer was lost): its receipt is the outcome
        try {
          const r = await queryReceipt(client, transactionId, { timeoutMs: 30_000, maxAttempts: 60 });
          if (r.found) {
            const result: SettleResponse = { success: true, ...base, extra: { status: r.receipt.status } };
            this.store.put(transactionId, { bytesHash, response: result });
            return result;
          }
          return { success: false, ...base, errorReason: 'settle_pending', errorMessage: 'the transaction was submitted and has no receipt yet; retry' };
        } catch (inner) {
          const li = toLedgerError(inner, { transactionId });
          const result: SettleResponse = { success: false, ...base, errorReason: li.status.toLowerCase(), errorMessage: li.message };
          if (!li.retryable) this.store.put(transactionId, { bytesHash, response: result });
          return result;
        }
      }
      const result: SettleResponse = { success: false, ...base, errorReason: le.status.toLowerCase(), errorMessage: le.hint ? `${le.status}: ${le.hint}` : le.status };
      // a consensus failure is final for this transaction id; remember it so retries agree
      if (le.phase === 'receipt' && !le.retryable) this.store.put(transactionId, { bytesHash, response: result });
      return result;
    }
  }
}
