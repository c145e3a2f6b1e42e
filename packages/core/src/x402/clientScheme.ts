// The payer's side of the x402 `exact` scheme on Hedera: a SchemeNetworkClient for @x402/core /
// @x402/fetch. It builds a TransferTransaction payer -> payTo of exactly `amount` tinybars whose
// transaction id account is the facilitator's fee payer (extra.feePayer), freezes it for one node,
// signs it as the payer only, and returns { transaction: base64 }.
import { AccountId, Hbar, HbarUnit, Long, TransactionId, TransferTransaction } from '@hashgraph/sdk';
import { x402Client } from '@x402/core/client';
import type { PaymentPayloadContext, PaymentPayloadResult, PaymentRequirements, SchemeNetworkClient } from '@x402/core/types';
import { wrapFetchWithPayment } from '@x402/fetch';
import type { HederaNetwork as HederaNetworkName } from '../did.js';
import { parsePrivateKey, signTransaction, type KeyType } from '../keys.js';
import { ENTITY_ID, EXACT_SCHEME, HBAR_ASSET, isHederaNetwork, x402NetworkId } from './network.js';

export interface HederaPayerOptions {
  accountId: string;
  /** DER hex or 0x-hex ECDSA; kept in memory only */
  privateKey: string;
  keyType?: KeyType;
  /** the node account id the payment is frozen for (default 0.0.3) */
  nodeAccountId?: string;
  /** max transaction fee the payer allows the fee payer to be charged (default 1 HBAR) */
  maxTransactionFeeTinybars?: bigint;
  /** valid duration of the payment transaction, s (default 120) */
  validDurationSeconds?: number;
  /** refuse to pay more than this per payment (tinybars) */
  maxAmountTinybars?: bigint;
}

export class ExactHederaClientScheme implements SchemeNetworkClient {
  readonly scheme = EXACT_SCHEME;
  private readonly key;
  private readonly accountId: AccountId;

  constructor(private readonly options: HederaPayerOptions) {
    this.key = parsePrivateKey(options.privateKey, options.keyType);
    this.accountId = AccountId.fromString(options.accountId);
  }

  async createPaymentPayload(x402Version: number, requirements: PaymentRequirements, context?: PaymentPayloadContext): Promise<PaymentPayloadResult> {
    if (!isHederaNetwork(requirements.network)) throw new Error(`not a Hedera network: ${requirements.network}`);
    if (requirements.asset !== HBAR_ASSET) throw new Error(`only HBAR (asset ${HBAR_ASSET}) is supported, got ${requirements.asset}`);
    if (!ENTITY_ID.test(requirements.payTo)) throw new Error('payTo is not a Hedera account id');
    if (!/^[1-9]\d*$/.test(requirements.amount)) throw new Error('amount must be a positive integer of tinybars');
    const feePayer = (requirements.extra as { feePayer?: unknown } | undefined)?.feePayer;
    if (typeof feePayer !== 'string' || !ENTITY_ID.test(feePayer)) throw new Error('extra.feePayer is missing');
    if (feePayer === this.options.accountId) throw new Error('the fee payer must not be the payer');
    const amount = BigInt(requirements.amount);
    const cap = this.options.maxAmountTinybars ?? (context?.maxAmountPerPayment ? BigInt(context.maxAmountPerPayment) : undefined);
    if (cap !== undefined && amount > cap) throw new Error(`payment of ${amount} tinybars exceeds the cap of ${cap}`);

    const tinybars = (n: bigint) => Hbar.from(Long.fromString(n.toString()), HbarUnit.Tinybar);
    const tx = new TransferTransaction()
      .addHbarTransfer(this.accountId, tinybars(-amount))
      .addHbarTransfer(AccountId.fromString(requirements.payTo), tinybars(amount))
      .setTransactionId(TransactionId.generate(AccountId.fromString(feePayer)))
      .setNodeAccountIds([AccountId.fromString(this.options.nodeAccountId ?? '0.0.3')])
      .setMaxTransactionFee(tinybars(this.options.maxTransactionFeeTinybars ?? 100_000_000n))
      .setTransactionValidDuration(this.options.validDurationSeconds ?? 120)
      .freeze();
    await signTransaction(tx, this.key);
    return { x402Version, payload: { transaction: Buffer.from(tx.toBytes()).toString('base64') } };
  }
}

export interface PayingFetchOptions extends HederaPayerOptions {
  /** ledger node; only its account id is used (the facilitator submits) */
  node?: { address?: string; accountId: string };
  /** networks to pay on (default: all of local, testnet, previewnet, mainnet) */
  networks?: HederaNetworkName[];
  /** per-payment cap in tinybars (spend control); required */
  maxAmountTinybars: bigint;
  fetch?: typeof globalThis.fetch;
}

/** An x402Client paying HBAR on Hedera only, capped per payment. */
export function createHederaX402Client(options: PayingFetchOptions): x402Client {
  const scheme = new ExactHederaClientScheme({ ...options, nodeAccountId: options.node?.accountId ?? options.nodeAccountId });
  const networks = options.networks ?? (['local', 'testnet', 'previewnet', 'mainnet'] as HederaNetworkName[]);
  return x402Client.fromConfig({
    schemes: networks.map((n) => ({ network: x402NetworkId(n), client: scheme })),
    // spend control: only HBAR on the listed Hedera networks, at most maxAmountTinybars per payment
    spendControls: {
      maxAmountPerPayment: false,
      allowedAssets: networks.map((n) => ({ network: x402NetworkId(n), asset: HBAR_ASSET, maxAmountPerPayment: options.maxAmountTinybars.toString() })),
    },
    policies: [(_v, reqs) => reqs.filter((r) => isHederaNetwork(r.network) && r.asset === HBAR_ASSET)],
  });
}

/** fetch that answers 402s by paying in HBAR through the x402 `exact` scheme. */
export function createPayingFetch(options: PayingFetchOptions): typeof globalThis.fetch {
  const client = createHederaX402Client(options);
  return wrapFetchWithPayment(options.fetch ?? globalThis.fetch, client) as typeof globalThis.fetch;
}
